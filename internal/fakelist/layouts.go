package fakelist

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Layouts are key sets whose shapes stress different cuts: zero-padded counters in one
// folder, dated folders, deep trees, hex hashes, and keys over a wide alphabet with
// non-ASCII runes, spaces and punctuation that sort between the usual characters.
func Layouts(rng *rand.Rand) map[string][]string {
	flat := make([]string, 0, 3000)
	for i := range 3000 {
		flat = append(flat, fmt.Sprintf("data/part-%07d.json", i*7))
	}
	foldered := make([]string, 0, 3000)
	for d := range 40 {
		for i := range 1 + rng.IntN(120) {
			foldered = append(foldered, fmt.Sprintf("data/dt=2024-%02d-%02d/part-%05d.gz", d/28+1, d%28+1, i))
		}
		foldered = append(foldered, fmt.Sprintf("data/dt=2024-%02d-%02d.manifest", d/28+1, d%28+1))
	}
	deep := make([]string, 0, 3000)
	for range 3000 {
		deep = append(deep, fmt.Sprintf("data/%c/%c%c/%d/%d.bin", 'a'+rng.IntN(3), 'a'+rng.IntN(26), 'a'+rng.IntN(26), rng.IntN(9), rng.IntN(1000)))
	}
	hex := make([]string, 0, 3000)
	for range 3000 {
		hex = append(hex, fmt.Sprintf("data/%016x", rng.Uint64()))
	}
	wide := make([]string, 0, 2000)
	alpha := []rune("aZ09 -._~!/+%é日\u00a0")
	for range 2000 {
		n := 1 + rng.IntN(12)
		var b strings.Builder
		b.WriteString("data/")
		for range n {
			b.WriteRune(alpha[rng.IntN(len(alpha))])
		}
		wide = append(wide, b.String())
	}
	return map[string][]string{"flat": flat, "foldered": foldered, "deep": deep, "hex": hex, "wide": wide}
}
