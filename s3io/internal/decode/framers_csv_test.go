package decode

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/spate-io/beam-s3/internal/s3test"
)

// csvCases are framings every split of the input must give. err, when set, is the text
// the error must hold.
var csvCases = []struct {
	in   string
	want []string
	err  string
}{
	{"", nil, ""},
	{"a,b,c", []string{"a,b,c"}, ""},
	{"a,b\n", []string{"a,b"}, ""},
	{"a\r\nb\r\n", []string{"a", "b"}, ""},
	{"a\r\nb\r", []string{"a", "b"}, ""},
	{"a\rb\n", []string{"a\rb"}, ""},
	{"a\r\r\n", []string{"a\r"}, ""},
	{"\n\n\r\na\n\r\n\r", []string{"a"}, ""},
	{" \n,\n", []string{" ", ","}, ""},
	{`"a,b",c` + "\n", []string{`"a,b",c`}, ""},
	{"\"line1\nline2\",x\r\ny\n", []string{"\"line1\nline2\",x", "y"}, ""},
	{"\"a\r\nb\"\r\n\"\r\"", []string{"\"a\r\nb\"", "\"\r\""}, ""},
	{"x,\"a\n\n\nb\"\n", []string{"x,\"a\n\n\nb\""}, ""},
	{`"a""b",c` + "\n" + `""""` + "\n", []string{`"a""b",c`, `""""`}, ""},
	{`"",""` + "\n" + `""`, []string{`"",""`, `""`}, ""},
	{`5'11",x` + "\ny", []string{`5'11",x`, "y"}, ""},
	{"a\"\nb\"\n", []string{`a"`, `b"`}, ""},
	{`a,b"c,"d"` + "\n", []string{`a,b"c,"d"`}, ""},
	{`a,"b"` + "\r\n", []string{`a,"b"`}, ""},
	{`"ab"` + "\r", []string{`"ab"`}, ""},
	// Lenient: text after a closing quote goes on unquoted, and its quotes are bytes.
	{`"ab"c,d` + "\n" + `"e"`, []string{`"ab"c,d`, `"e"`}, ""},
	{`"ab"c"d,e` + "\nf", []string{`"ab"c"d,e`, "f"}, ""},
	{`"ab" ,"c` + "\n" + `d"` + "\n", []string{`"ab" ,"c` + "\n" + `d"`}, ""},
	// The BOM only at the stream's start.
	{"\xef\xbb\xbfa,b\nc", []string{"a,b", "c"}, ""},
	{"\xef\xbb\xbf", nil, ""},
	{"\xef\xbb\xbf\n\"q\"", []string{`"q"`}, ""},
	{"\xef\xbb", []string{"\xef\xbb"}, ""},
	{"\xef\xbbx", []string{"\xef\xbbx"}, ""},
	{"a\n\xef\xbb\xbfb", []string{"a", "\xef\xbb\xbfb"}, ""},
	// Ends inside a quoted field.
	{`"unterminated`, nil, "opened at byte 0"},
	{`"""`, nil, "opened at byte 0"},
	{`"a""`, nil, "opened at byte 0"},
	{`"a"""`, []string{`"a"""`}, ""},
	{"x\r\n\"abc\ndef", []string{"x"}, "opened at byte 3"},
	{"\xef\xbb\xbfx,\"", nil, "opened at byte 5"},
	{`a"b,"c` + "\nd\n", nil, "opened at byte 4"},
}

func TestFrameCSV(t *testing.T) {
	for _, c := range csvCases {
		got, err := s3test.FrameAll(t, NewCSVFramer(), []byte(c.in))
		checkCSVResult(t, c.in, "whole", got, err, c.want, c.err)
		// Every split point: a CR, a quote, half a "" or of a BOM at the buffer's end.
		for at := 1; at < len(c.in); at++ {
			got, _, err := readAll(t, "csv", &splitReader{data: []byte(c.in), at: at}, 1<<20)
			if len(got) == 0 {
				got = nil
			}
			checkCSVResult(t, c.in, fmt.Sprintf("split at %d", at), got, err, c.want, c.err)
		}
		// One byte at a time.
		got, _, err = readAll(t, "csv", &sizedReader{data: []byte(c.in), sizes: []byte{1}}, 1<<20)
		if len(got) == 0 {
			got = nil
		}
		checkCSVResult(t, c.in, "bytewise", got, err, c.want, c.err)
	}
}

func checkCSVResult(t *testing.T, in, how string, got []string, err error, want []string, wantErr string) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("csv %q (%s) = %q, want %q", in, how, got, want)
	}
	if wantErr == "" {
		if err != nil {
			t.Errorf("csv %q (%s): %v", in, how, err)
		}
		return
	}
	if !errors.Is(err, ErrTruncatedRecord) || !strings.Contains(err.Error(), "ends inside a quoted field that "+wantErr) {
		t.Errorf("csv %q (%s): err = %v, want ErrTruncatedRecord %q", in, how, err, wantErr)
	}
}

// TestFrameCSVDirect pins the Frame contract: partial records ask for more, an empty line
// is consumed without a record, and records are capacity-limited sub-slices.
func TestFrameCSVDirect(t *testing.T) {
	for _, in := range []string{"abc", `"a` + "\n", `"a"`, `x,"a""`, "ab\r", "\xef\xbb"} {
		adv, rec, err := NewCSVFramer().Frame([]byte(in), false)
		if adv != 0 || rec != nil || err != nil {
			t.Errorf("Frame(%q, false) = %d, %q, %v; want 0, nil, nil", in, adv, rec, err)
		}
	}
	f := NewCSVFramer()
	data := []byte("\r\na,\"b\nc\"\r\nnext")
	adv, rec, err := f.Frame(data, false)
	if adv != 2 || rec != nil || err != nil {
		t.Fatalf("empty CRLF line: %d, %q, %v; want 2, nil, nil", adv, rec, err)
	}
	adv, rec, err = f.Frame(data[2:], false)
	if adv != 9 || string(rec) != "a,\"b\nc\"" || cap(rec) != len(rec) || err != nil {
		t.Fatalf("record: %d, %q (cap %d), %v", adv, rec, cap(rec), err)
	}
	if &rec[0] != &data[2] {
		t.Error("the record is not a sub-slice of data")
	}
	if adv, rec, err = f.Frame(data[11:], true); adv != 4 || string(rec) != "next" || err != nil {
		t.Fatalf("last record: %d, %q, %v", adv, rec, err)
	}
	if adv, rec, err = f.Frame(nil, true); adv != 0 || rec != nil || err != nil {
		t.Fatalf("at the end: %d, %q, %v", adv, rec, err)
	}
}

// TestFrameCSVResumesScan checks that a record growing by one byte per call is scanned
// once, not from its start on every call, and that the remembered scan is dropped once the
// record is returned.
func TestFrameCSVResumesScan(t *testing.T) {
	rec := `a,"` + strings.Repeat("x\n,", 100) + `""",b"c,` + strings.Repeat("y", 100) + "\n"
	data := []byte(rec + `"z"` + "\n")
	f := &csvFramer{}
	for k := 1; k < len(rec); k++ {
		adv, got, err := f.Frame(data[:k], false)
		if adv != 0 || got != nil || err != nil {
			t.Fatalf("prefix %d: %d, %q, %v", k, adv, got, err)
		}
		// The scan reached the end of the data, or stopped at a quote whose meaning
		// depends on the next byte.
		if f.scanned != k && !(f.scanned == k-1 && data[k-1] == '"') {
			t.Fatalf("prefix %d: scanned %d bytes", k, f.scanned)
		}
	}
	adv, got, err := f.Frame(data, false)
	if adv != len(rec) || string(got) != rec[:len(rec)-1] || err != nil {
		t.Fatalf("whole record: %d, %q, %v", adv, got, err)
	}
	if f.scanned != 0 || f.inQuote {
		t.Fatalf("scan state kept after the record: %d, %v", f.scanned, f.inQuote)
	}
	if adv, got, err := f.Frame(data[adv:], true); adv != 4 || string(got) != `"z"` || err != nil {
		t.Fatalf("next record: %d, %q, %v", adv, got, err)
	}

	// Bytes already scanned are not looked at again: changing them between calls (which a
	// reader never does) shows where the scan resumed. Rescanned from its start, the second
	// data would open a quoted field at byte 0 and ask for more.
	f = &csvFramer{}
	if adv, got, err := f.Frame([]byte("abcd"), false); adv != 0 || got != nil || err != nil {
		t.Fatalf("first part: %d, %q, %v", adv, got, err)
	}
	if adv, got, err := f.Frame([]byte("\"bcd,x\ny\n"), false); adv != 7 || string(got) != `"bcd,x` || err != nil {
		t.Fatalf("resumed: %d, %q, %v; want the scan to go on from byte 4", adv, got, err)
	}
}

// genCSV writes a valid CSV file of n records with the field mix real exports have:
// quoted fields holding separators, escaped quotes, LF and CRLF; bare quotes inside
// unquoted fields; empty fields; CRLF or LF line ends; a record of one empty quoted field.
func genCSV(rng *rand.Rand, n int) []byte {
	var b []byte
	for r := 0; r < n; r++ {
		fields := 1 + rng.IntN(6)
		for i := 0; i < fields; i++ {
			if i > 0 {
				b = append(b, ',')
			}
			switch rng.IntN(6) {
			case 0: // empty
			case 1: // unquoted with a bare quote
				b = append(b, "5'11\""...)
			case 2, 3: // quoted
				b = append(b, '"')
				for k := rng.IntN(12); k > 0; k-- {
					b = append(b, []string{"a", ",", `""`, "\n", "\r\n", " ", "é", "\r"}[rng.IntN(8)]...)
				}
				b = append(b, '"')
			default:
				b = fmt.Appendf(b, "v%d", rng.IntN(1000))
			}
		}
		switch rng.IntN(8) {
		case 0:
			b = append(b, "\r\n"...)
		case 1:
			b = append(b, "\n\n"...) // and an empty line
		default:
			b = append(b, '\n')
		}
	}
	if rng.IntN(2) == 0 && len(b) > 0 && b[len(b)-1] == '\n' {
		b = b[:len(b)-1] // no newline after the last record
	}
	return b
}

// TestFrameCSVMatchesEncodingCSV frames generated valid files and checks, against
// encoding/csv reading the whole file, the number of records and each record's fields
// when encoding/csv re-parses the raw record on its own.
func TestFrameCSVMatchesEncodingCSV(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for round := 0; round < 300; round++ {
		data := genCSV(rng, 1+rng.IntN(40))
		r := csv.NewReader(bytes.NewReader(data))
		r.FieldsPerRecord, r.LazyQuotes = -1, true
		want, err := r.ReadAll()
		if err != nil {
			t.Fatalf("encoding/csv over %q: %v", data, err)
		}
		got, _, err := readAll(t, "csv", &sizedReader{data: data, sizes: []byte{byte(1 + round%50), 3, 90}}, 1<<20)
		if err != nil {
			t.Fatalf("csv over %q: %v", data, err)
		}
		if len(got) != len(want) {
			t.Fatalf("csv over %q: %d records, encoding/csv %d", data, len(got), len(want))
		}
		for i, raw := range got {
			one := csv.NewReader(strings.NewReader(raw))
			one.FieldsPerRecord, one.LazyQuotes = -1, true
			fields, err := one.Read()
			if err != nil {
				t.Fatalf("record %d %q: %v", i, raw, err)
			}
			if _, err := one.Read(); err != io.EOF {
				t.Fatalf("record %d %q holds more than one record for encoding/csv (%v)", i, raw, err)
			}
			if !reflect.DeepEqual(fields, want[i]) {
				t.Fatalf("record %d %q: fields %q, encoding/csv %q", i, raw, fields, want[i])
			}
		}
	}
}
