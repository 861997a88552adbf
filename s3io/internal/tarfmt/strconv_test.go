package tarfmt

import "testing"

// TestParseOctalAsGNUTar checks the numeric fields GNU tar reads otherwise than
// archive/tar did (the values are GNU tar 1.34's, bsdtar's and Python's where they agree).
func TestParseOctalAsGNUTar(t *testing.T) {
	for _, c := range []struct {
		field string
		want  int64
		bad   bool
	}{
		{"00000000016\x00", 14, false},
		{"      16 \x00\x00\x00", 14, false},
		{"\x00\x00\x00\x00\x00\x00\x00\x000016", 0, false}, // archive/tar: 14
		{"\x000000000016\x00", 14, false},                  // one spilled NUL is skipped
		{"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00", 0, false},
		{"0000644\x00", 0o644, false},
		{"000000000017 ", 0o17, false},
		{"12x4567\x00\x00\x00\x00\x00", 0, true},
		{"9\x00", 0, true},
	} {
		var p parser
		got := p.parseOctal([]byte(c.field))
		if (p.err != nil) != c.bad || !c.bad && got != c.want {
			t.Errorf("parseOctal(%q) = %d, err %v; want %d, bad %v", c.field, got, p.err, c.want, c.bad)
		}
	}
}

// TestIsHeader tells headers by their checksum, magic or none.
func TestIsHeader(t *testing.T) {
	var b block
	copy(b[:], "a.txt")
	copy(b.toV7().size(), "00000000003\x00")
	copy(b.toV7().chksum(), "        ")
	sum, _ := b.computeChecksum()
	if IsHeader(b[:]) {
		t.Fatal("a block whose checksum field is blank is a header")
	}
	copy(b.toV7().chksum(), []byte(formatChecksum(sum)))
	if !IsHeader(b[:]) {
		t.Fatal("a v7 header (no magic) with its checksum is not a header")
	}
	if IsHeader(b[:100]) || IsHeader(make([]byte, blockSize)) {
		t.Fatal("a short block or a zero block is a header")
	}
}

func formatChecksum(sum int64) string {
	const digits = "01234567"
	out := []byte("000000\x00 ")
	for i := 5; i >= 0; i-- {
		out[i] = digits[sum&7]
		sum >>= 3
	}
	return string(out)
}
