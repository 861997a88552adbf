package faultproxy

import (
	"crypto/sha256"
	"encoding/binary"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"
)

// Rates configures Chaos: the probability, per object GET, of each kind of fault (their sum
// at most 1; one GET gets at most one), how long stalls and latency spikes last, and how
// many faults one key and one Range may get, which is what keeps every fault transient.
type Rates struct {
	SlowDown      float64 // answer 503 SlowDown
	InternalError float64 // answer 500 InternalError
	Reset         float64 // forward, then break the connection at a random byte of the body
	Stall         float64 // forward, then pause the body for StallFor at a random byte
	Delay         float64 // wait between MaxDelay/4 and MaxDelay, then forward

	StallFor time.Duration // default 1.5 s: longer than the reader's timeout, so it gives up
	MaxDelay time.Duration // default 100 ms: shorter than the reader's timeout

	// MaxConsecutive bounds the faults in a row on GETs of one key with one Range header
	// (default 2): the GET after that many faulted ones is forwarded untouched. A request
	// the client retries as is keeps its Range, so this bounds the failed attempts of one
	// request; a body resumed from its next byte asks for a new Range.
	MaxConsecutive int
	// MaxPerKey bounds the faults on all GETs of one key (default 4). A reader that allows
	// more than MaxPerKey failed attempts per request and resumes per body therefore always
	// finishes, however the GETs of the key are split into ranges and retried.
	MaxPerKey int
}

func (r Rates) withDefaults() Rates {
	if r.StallFor == 0 {
		r.StallFor = 1500 * time.Millisecond
	}
	if r.MaxDelay == 0 {
		r.MaxDelay = 100 * time.Millisecond
	}
	if r.MaxConsecutive == 0 {
		r.MaxConsecutive = 2
	}
	if r.MaxPerKey == 0 {
		r.MaxPerKey = 4
	}
	return r
}

// Chaos returns a decider for Proxy.DecideGet that injects the faults of r at random. Each
// GET's draw comes from a PCG seeded with a hash of seed, its key, its Range and how many
// GETs of that key and Range came before it, so a seed faults the same requests whatever order
// concurrent readers send them in (up to the per-key bound, which is spent in arrival order).
// Every fault — a latency spike included, since a spike that outlasts a reader's timeout
// fails that attempt — counts toward r.MaxConsecutive and r.MaxPerKey.
func Chaos(seed uint64, r Rates) func(key, rng string, n int) Fault {
	r = r.withDefaults()
	var mu sync.Mutex
	perKey := map[string]int{}      // faults on a key
	perRange := map[[2]string]int{} // GETs of a key and Range so far
	inARow := map[[2]string]int{}   // faults in a row on a key and Range
	return func(key, rng string, _ int) Fault {
		id := [2]string{key, rng}
		mu.Lock()
		defer mu.Unlock()
		perRange[id]++
		// SHA-256 of everything that names this GET seeds its PCG: similar keys and ranges
		// must draw independent faults.
		sum := sha256.Sum256([]byte(strconv.FormatUint(seed, 10) + "\x00" + key + "\x00" + rng + "\x00" + strconv.Itoa(perRange[id])))
		rnd := rand.New(rand.NewPCG(binary.LittleEndian.Uint64(sum[:8]), binary.LittleEndian.Uint64(sum[8:16])))
		u, where := rnd.Float64(), rnd.Float64()
		if perKey[key] >= r.MaxPerKey || inARow[id] >= r.MaxConsecutive {
			inARow[id] = 0
			return Fault{}
		}
		var fault Fault
		switch {
		case u < r.SlowDown:
			fault = Fault{Status: 503, Code: "SlowDown"}
		case u < r.SlowDown+r.InternalError:
			fault = Fault{Status: 500, Code: "InternalError"}
		case u < r.SlowDown+r.InternalError+r.Reset:
			fault = Fault{ResetAt: min(max(where, 1e-9), 1-1e-9)}
		case u < r.SlowDown+r.InternalError+r.Reset+r.Stall:
			fault = Fault{StallAt: max(where, 1e-9), Stall: r.StallFor}
		case u < r.SlowDown+r.InternalError+r.Reset+r.Stall+r.Delay:
			fault = Fault{Delay: r.MaxDelay/4 + time.Duration(where*float64(r.MaxDelay*3/4))}
		default:
			inARow[id] = 0
			return Fault{}
		}
		perKey[key]++
		inARow[id]++
		return fault
	}
}
