package s3test

import (
	"fmt"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
)

func init() {
	register.Function1x1(RecordString)
}

// RecordString turns a record into a string, so that passert prints readable diffs and
// textio can write it. It is registered with Beam here.
func RecordString(b []byte) string { return string(b) }

// NDJSON returns n JSON records naming src and their index, and the text holding them, one
// a line.
func NDJSON(src string, n int) (text string, recs []string) {
	var b strings.Builder
	for i := 0; i < n; i++ {
		r := fmt.Sprintf(`{"src":%q,"i":%d}`, src, i)
		b.WriteString(r)
		b.WriteByte('\n')
		recs = append(recs, r)
	}
	return b.String(), recs
}
