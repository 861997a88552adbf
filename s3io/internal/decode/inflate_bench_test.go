package decode

import (
	"bytes"
	"io"
	"sync"
	"testing"

	"github.com/klauspost/compress/gzip"

	"github.com/spate-io/beam-s3/internal/clitool"
)

var benchGzip = sync.OnceValues(func() ([]byte, int) {
	text, _ := unitLines(150000) // ~27 MiB
	out, _ := clitool.Output([]byte(text), "gzip", "-c")
	return out, len(text)
})

// The checkpointing reader against klauspost/compress's gzip.Reader on one gzip member
// written by the gzip tool: what keeping checkpoints every 4 MiB costs (measured in
// docs/performance.md).
func BenchmarkInflateCheckpoints(b *testing.B) {
	data, n := benchGzip()
	for _, tc := range []struct {
		name string
		open func(io.Reader) (io.Reader, error)
	}{
		{"klauspost-gzip", func(r io.Reader) (io.Reader, error) { return gzip.NewReader(r) }},
		{"checkpoints-4MiB", func(r io.Reader) (io.Reader, error) { return OpenGzip(r, &Checkpoints{Every: 4 << 20}) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				s, err := tc.open(bytes.NewReader(data))
				if err != nil {
					b.Fatal(err)
				}
				if m, err := io.Copy(io.Discard, s); err != nil || m != int64(n) {
					b.Fatal(m, err)
				}
			}
		})
	}
}
