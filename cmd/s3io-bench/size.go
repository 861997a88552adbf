package main

import (
	"fmt"
	"strconv"
	"strings"
)

// byteSize is a flag value for sizes written for people: "2GiB", "256MiB", "16MiB", "213",
// "1.5GB". Binary suffixes (KiB, MiB, GiB, TiB) are powers of 1024, decimal ones (KB, MB, GB,
// TB) powers of 1000, and a bare number is bytes.
type byteSize int64

var sizeUnits = []struct {
	suffix string
	mult   float64
}{
	// Longest suffixes first, so that "MiB" is not read as "B" after a number "256Mi".
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30},
	{"B", 1},
}

func parseByteSize(s string) (byteSize, error) {
	t := strings.TrimSpace(s)
	mult := 1.0
	for _, u := range sizeUnits {
		if len(t) > len(u.suffix) && strings.EqualFold(t[len(t)-len(u.suffix):], u.suffix) {
			t, mult = strings.TrimSpace(t[:len(t)-len(u.suffix)]), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("size %q is not a number of bytes such as 213, 16MiB, 2GiB or 1.5GB", s)
	}
	return byteSize(v * mult), nil
}

func (b *byteSize) Set(s string) error {
	v, err := parseByteSize(s)
	if err != nil {
		return err
	}
	*b = v
	return nil
}

func (b byteSize) String() string { return formatBytes(int64(b)) }

// formatBytes renders n with the largest binary unit, else decimal unit, that divides it
// evenly, so that a size prints back the way it is usually typed ("2GiB", "90MB"), or in
// bytes.
func formatBytes(n int64) string {
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}} {
		if n >= u.mult && n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}
