package s3io

import (
	"bytes"
	"os"
	"path/filepath"

	"github.com/spate-io/beam-s3/internal/clitool"
)

// The stored forms of the resume tests' records that the command-line tools write: every
// codec, and archives of two entries, each read through a checkpoint and a broken body.

// toolEnc encodes with a command-line tool, reading the records on stdin. A missing tool
// fails the test (a panic in the fixture): .ci/run installs them all.
func toolEnc(name string, args ...string) func([]byte) []byte {
	return func(b []byte) []byte { return must(clitool.Output(b, name, args...)) }
}

// must is out, or a panic that fails the test whose fixture could not be made.
func must(out []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return out
}

// halves writes b into dir as two files cut at the line boundary nearest its middle, and
// returns their names.
func halves(dir string, b []byte) []string {
	cut := bytes.IndexByte(b[len(b)/2:], '\n') + len(b)/2 + 1
	names := []string{"part-1.txt", "part-2.txt"}
	os.WriteFile(filepath.Join(dir, names[0]), b[:cut], 0o644)
	os.WriteFile(filepath.Join(dir, names[1]), b[cut:], 0o644)
	return names
}

// archiveEnc returns an encoder that writes the records as two entries of an archive made
// by pack(dir, names), which leaves the archive's bytes in dir/out.
func archiveEnc(pack func(dir string, names []string)) func([]byte) []byte {
	return func(b []byte) []byte {
		dir, err := os.MkdirTemp("", "s3io-archive")
		if err != nil {
			panic(err)
		}
		defer os.RemoveAll(dir)
		pack(dir, halves(dir, b))
		out, err := os.ReadFile(filepath.Join(dir, "out"))
		if err != nil {
			panic(err)
		}
		return out
	}
}

func tarGz(dir string, names []string) {
	tarball, err := clitool.OutputIn(dir, nil, "tar", append([]string{"-cf", "-"}, names...)...)
	if err == nil {
		tarball, err = clitool.Output(tarball, "gzip", "-c")
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "out"), tarball, 0o644)
	}
	if err != nil {
		panic(err)
	}
}

func zipped(dir string, names []string) {
	if _, err := clitool.OutputIn(dir, nil, "zip", append([]string{"-q", "-X", "out.zip"}, names...)...); err != nil {
		panic(err)
	}
	if err := os.Rename(filepath.Join(dir, "out.zip"), filepath.Join(dir, "out")); err != nil {
		panic(err)
	}
}

func init() {
	resumeEncodings = append(resumeEncodings, []struct {
		name string
		enc  func([]byte) []byte
	}{
		{"pigz.txt.gz", toolEnc("pigz", "-c", "-b", "32")}, // one member of many blocks
		{"bgzip.txt.gz", toolEnc("bgzip", "-c")},           // BGZF: many members
		{"bzip2.txt.bz2", toolEnc("bzip2", "-c")},
		{"lbzip2.txt.bz2", toolEnc("lbzip2", "-c", "-n2", "-1")}, // one stream per 100k block
		{"xz.txt.xz", toolEnc("xz", "-c", "-T2", "--block-size=64KiB")},
		{"lz4.txt.lz4", toolEnc("lz4", "-c", "-q")},
		{"snappy.txt.sz", clitool.SnappyFramed}, // no Debian tool writes Snappy framing
		{"zlib.txt.zz", toolEnc("pigz", "-z", "-c")},
		{"deflate.txt.deflate", func(b []byte) []byte { return must(clitool.Deflate(b, 6, -15)) }},
		{"brotli.txt.br", toolEnc("brotli", "-c", "-q", "5")},
		{"tar.txt.tar.gz", archiveEnc(tarGz)},
		{"zip.txt.zip", archiveEnc(zipped)},
	}...)
}
