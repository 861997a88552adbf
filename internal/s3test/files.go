package s3test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ReadLines returns the lines of every file matching pattern, such as the shards textio
// wrote; no file means no lines.
func ReadLines(t testing.TB, pattern string) []string {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if s := strings.TrimSuffix(string(data), "\n"); s != "" {
			lines = append(lines, strings.Split(s, "\n")...)
		}
	}
	return lines
}
