// Command gen writes about n MiB of NDJSON-like event lines (the shape of
// s3io/internal/decode's benchLines) to stdout.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
)

func main() {
	mib := flag.Int("mib", 64, "MiB to write")
	flag.Parse()
	rng := rand.New(rand.NewPCG(1, 2))
	types := []string{"page_view", "click", "scroll", "search", "add_to_cart", "purchase"}
	w := bufio.NewWriter(os.Stdout)
	var b []byte
	total := 0
	for total < *mib<<20 {
		b = b[:0]
		b = fmt.Appendf(b, `{"ts":"2026-11-%02dT%02d:%02d:%02dZ","type":%q,"user":"u%07d","path":"/p/%d","ms":%d,"pad":"`,
			1+rng.IntN(30), rng.IntN(24), rng.IntN(60), rng.IntN(60), types[rng.IntN(len(types))], rng.IntN(10_000_000), rng.IntN(100_000), rng.IntN(5000))
		for len(b) < 197 {
			b = append(b, byte('a'+rng.IntN(26)))
		}
		b = append(b, '"', '}', '\n')
		w.Write(b)
		total += len(b)
	}
	w.Flush()
}
