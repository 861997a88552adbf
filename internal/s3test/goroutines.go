package s3test

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// SettleGoroutines fails the test if, within 5 s, goroutines whose stacks contain one of
// markers (such as "s3io/internal/fetch.(*Fetcher)") have not all ended: what a read starts
// must not outlive it.
func SettleGoroutines(t testing.TB, markers ...string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, dump := countGoroutines(markers)
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines remain after the read ended:\n%s", n, dump)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func countGoroutines(markers []string) (int, string) {
	buf := make([]byte, 4<<20)
	dump := string(buf[:runtime.Stack(buf, true)])
	n := 0
	for _, g := range strings.Split(dump, "\n\n") {
		for _, m := range markers {
			if strings.Contains(g, m) {
				n++
				break
			}
		}
	}
	return n, dump
}
