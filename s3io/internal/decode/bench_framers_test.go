package decode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"testing"
)

// benchCSV returns about 32 MiB of CSV records of about 200 bytes, with the mix exports
// have: unquoted numbers and words, quoted fields holding commas and escaped quotes, a bare
// quote in an unquoted field, and a quoted newline in one record of 16.
func benchCSV() []byte {
	rng := rand.New(rand.NewPCG(5, 6))
	names := []string{`"Smith, John"`, `"O""Brien, Pat"`, "Lee", `"Müller, Jörg"`, "Nguyen"}
	var b []byte
	for len(b) < 32<<20 {
		start := len(b)
		b = fmt.Appendf(b, `2026-11-%02dT%02d:%02d:%02dZ,%d,%s,%d,5'11",/p/%d,%d.%02d,`,
			1+rng.IntN(30), rng.IntN(24), rng.IntN(60), rng.IntN(60), rng.IntN(1e7), names[rng.IntN(len(names))], rng.IntN(100), rng.IntN(1e5), rng.IntN(1000), rng.IntN(100))
		if rng.IntN(16) == 0 {
			b = append(b, "\"a note\nover two lines\","...)
		} else {
			b = append(b, `"a note, short",`...)
		}
		for len(b)-start < 196 {
			b = append(b, byte('a'+rng.IntN(26)))
		}
		b = append(b, "\r\n"...)
	}
	return b
}

// benchCloudTrail returns about 32 MiB of CloudTrail events of about 1 KiB each, as one
// {"Records":[...]} document and, for comparison, as NDJSON.
func benchCloudTrail() (doc, ndjson []byte) {
	rng := rand.New(rand.NewPCG(9, 10))
	doc = append(doc, `{"Records":[`...)
	for len(doc) < 32<<20 {
		rec, err := json.Marshal(cloudTrailRecord(rng))
		if err != nil {
			panic(err)
		}
		if len(ndjson) > 0 {
			doc = append(doc, ',')
		}
		doc = append(doc, rec...)
		ndjson = append(append(ndjson, rec...), '\n')
	}
	return append(doc, "]}"...), ndjson
}

// BenchmarkFramerReader measures each framer as the reader runs it: through a
// RecordReader over bytes in memory, so with slab allocation and the per-record call but
// no decompression. The csv and lines-csv cases read the same bytes, as do json-array and
// lines-ndjson the same events.
func BenchmarkFramerReader(b *testing.B) {
	csvData := benchCSV()
	doc, nd := benchCloudTrail()
	lines := func() Framer { return FramerFunc(FrameLines) }
	for _, tc := range []struct {
		name     string
		newFrame func() Framer
		data     []byte
	}{
		{"csv", NewCSVFramer, csvData},
		{"lines-csv", lines, csvData},
		{"json-array", NewJSONArrayFramer, doc},
		{"lines-ndjson", lines, nd},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.data)))
			b.ReportAllocs()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			records, ops := 0, 0
			for b.Loop() {
				rr := NewRecordReader(bytes.NewReader(tc.data), tc.newFrame(), 16<<20, 0)
				for {
					if _, _, err := rr.Next(); err != nil {
						if err != io.EOF {
							b.Fatal(err)
						}
						break
					}
					records++
				}
				ops++
			}
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(records)/float64(ops), "records/op")
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(records), "allocs/record")
		})
	}
}
