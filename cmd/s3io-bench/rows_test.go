package main

import (
	"slices"
	"strings"
	"testing"
)

// Every prefix of the fixtures holds the same records: 1,000,000 of them, 200 MB.
const (
	fixtureRecords = 1_000_000
	fixtureBytes   = 200_000_000
)

// fixture is a benchRun over the formats (and small/ when small is set) with the results
// given, as the report sees them after the runs.
func fixture(o *options, results ...runResult) *benchRun {
	b := &benchRun{opts: o, data: map[string]*prefixData{}, results: results}
	for _, p := range append(slices.Clone(o.formats), prefixSmall) {
		b.data[p] = &prefixData{Records: fixtureRecords, DecompressedBytes: fixtureBytes}
	}
	return b
}

// res is one successful run that read the whole prefix in wall seconds using cpu seconds,
// while the server used server seconds; the floor's times are beam.Run's.
func res(round int, prefix, variant string, wall, cpu, server float64, rssMiB int64) runResult {
	r := runResult{job: job{round, prefix, variant}, wallSeconds: wall, cpuSeconds: cpu, serverCPU: server, otherCPU: 0, inFlight: -1,
		child: childResult{Records: fixtureRecords, Bytes: fixtureBytes, VmHWMKiB: rssMiB << 10}}
	if variant == variantFloor {
		r.wallSeconds, r.cpuSeconds = wall+1, cpu+1 // process start and generating the records
		r.child.PipelineSeconds, r.child.PipelineCPUSeconds = wall, cpu
	}
	return r
}

func checkRows(t *testing.T, got *rowsTable, cols []string, rows [][]string, notes []string) {
	t.Helper()
	if !slices.Equal(got.cols, cols) {
		t.Errorf("columns %q, want %q", got.cols, cols)
	}
	for i := range max(len(got.rows), len(rows)) {
		switch {
		case i >= len(got.rows):
			t.Errorf("row %d missing, want %q", i, rows[i])
		case i >= len(rows):
			t.Errorf("extra row %d: %q", i, got.rows[i])
		case !slices.Equal(got.rows[i], rows[i]):
			t.Errorf("row %d:\n got %q\nwant %q", i, got.rows[i], rows[i])
		}
	}
	if !slices.Equal(got.notes, notes) {
		t.Errorf("notes:\n got %q\nwant %q", got.notes, notes)
	}
}

// On loopback: the two-core floor from the medians of the floor's CPU and loop2's CPU plus
// its server's, against s3io's median wall time, per format; and the highest peak RSS.
func TestIssueRowsLoopback(t *testing.T) {
	o := &options{formats: []string{formatPlain, formatGzip, formatZstd}, variants: []string{variantS3io, variantLoop2, variantFloor}, rounds: 3}
	var rs []runResult
	for i, round := range []int{1, 2, 3} {
		rs = append(rs,
			res(round, prefixMemory, variantFloor, 3, []float64{5, 6, 7}[i], 0, 900),
			// plain: s3io median wall 5 s (40 MB/s); floor (6 + 1.5 + 0.5) / 2 = 4 s: 0.80.
			res(round, formatPlain, variantS3io, []float64{6, 4, 5}[i], 9, 1, 200),
			res(round, formatPlain, variantLoop2, 2, []float64{1.5, 1, 2}[i], 0.5, 60),
			// gzip: 5 s against (6 + 3 + 1) / 2 = 5 s: 1.00; one run peaks at 270 MiB.
			res(round, formatGzip, variantS3io, 5, 9, 1, []int64{200, 270, 210}[i]),
			res(round, formatGzip, variantLoop2, 3, 3, 1, 60),
			// zstd: 4 s against (6 + 1 + 0.6) / 2 = 3.8 s: 0.95.
			res(round, formatZstd, variantS3io, 4, 9, 1, 200),
			res(round, formatZstd, variantLoop2, 2, 1, 0.6, 60),
		)
	}
	checkRows(t, fixture(o, rs...).issueRows(), []string{"plain", "gzip", "zstd"}, [][]string{
		{"s3io on loopback (s3io)", "40 MB/s, 5.00 s", "40 MB/s, 5.00 s", "50 MB/s, 4.00 s", ""},
		{"two-core floor = (floor CPU s + loop2 CPU s + its server's CPU s) / 2", "(6.00 + 1.50 + 0.50) / 2 = 4.00 s", "(6.00 + 3.00 + 1.00) / 2 = 5.00 s", "(6.00 + 1.00 + 0.60) / 2 = 3.80 s", ""},
		{"s3io ÷ two-core floor (floor s ÷ s3io wall s)", "0.80× **missed**", "1.00× met", "0.95× met", "≥ 0.85 plain, ≥ 0.90 gzip and zstd"},
		{"s3io ÷ floor without the server, (floor CPU s + loop2 CPU s) / 2", "3.75 s: 0.75×", "4.50 s: 0.90×", "3.50 s: 0.88×", ""},
		{"cores busy: s3io's process, and with the server's CPU time", "1.80, 2.00", "1.80, 2.00", "2.25, 2.50", ""},
		{"peak RSS of s3io, highest run", "200 MiB", "**270 MiB**", "200 MiB", "< 256 MiB"},
	}, []string{
		"shaped ÷ unshaped, and small objects against loop32: need --shape",
		"highest peak RSS of any s3io run: 270 MiB (s3io on gzip/, round 2), **not under** 256 MiB",
	})
}

// A row whose variants were not selected, or did not succeed, says why in a note.
func TestIssueRowsMissing(t *testing.T) {
	o := &options{formats: []string{formatPlain, formatGzip}, variants: []string{variantS3io, variantFloor}, rounds: 1}
	failed := res(1, formatGzip, variantS3io, 5, 9, 1, 200)
	failed.err = "pipeline: boom"
	b := fixture(o, res(1, prefixMemory, variantFloor, 3, 6, 0, 900), res(1, formatPlain, variantS3io, 5, 9, 1, 200), failed)
	checkRows(t, b.issueRows(), []string{"plain", "gzip"}, [][]string{
		{"s3io on loopback (s3io)", "40 MB/s, 5.00 s", "—", ""},
		{"two-core floor = (floor CPU s + loop2 CPU s + its server's CPU s) / 2", "—", "—", ""},
		{"s3io ÷ two-core floor (floor s ÷ s3io wall s)", "—", "—", "≥ 0.85 plain, ≥ 0.90 gzip and zstd"},
		{"s3io ÷ floor without the server, (floor CPU s + loop2 CPU s) / 2", "—", "—", ""},
		{"cores busy: s3io's process, and with the server's CPU time", "1.80, 2.00", "—", ""},
		{"peak RSS of s3io, highest run", "200 MiB", "—", "< 256 MiB"},
	}, []string{
		"s3io on loopback (s3io): no run of s3io on gzip/ succeeded",
		"two-core floor = (floor CPU s + loop2 CPU s + its server's CPU s) / 2: loop2 not selected (--variants)",
		"s3io ÷ two-core floor (floor s ÷ s3io wall s): loop2 not selected (--variants); no run of s3io on gzip/ succeeded",
		"s3io ÷ floor without the server, (floor CPU s + loop2 CPU s) / 2: loop2 not selected (--variants); no run of s3io on gzip/ succeeded",
		"cores busy: s3io's process, and with the server's CPU time: no run of s3io on gzip/ succeeded",
		"shaped ÷ unshaped, and small objects against loop32: need --shape",
		"peak RSS of s3io, highest run: no run of s3io on gzip/ succeeded",
		"highest peak RSS of any s3io run: 200 MiB (s3io on plain/, round 1), under 256 MiB",
	})
	// Without a record of the server's CPU time the floor is unknown, and says so.
	o.variants = append(o.variants, variantLoop2)
	loop := res(1, formatPlain, variantLoop2, 2, 1.5, -1, 60)
	b = fixture(o, res(1, prefixMemory, variantFloor, 3, 6, 0, 900), res(1, formatPlain, variantS3io, 5, 9, 1, 200), loop)
	o.formats = []string{formatPlain}
	got := b.issueRows()
	if want := "two-core floor = (floor CPU s + loop2 CPU s + its server's CPU s) / 2: the server's CPU time during loop2 on plain/ is unknown"; !slices.Contains(got.notes, want) {
		t.Errorf("notes %q lack %q", got.notes, want)
	}
}

// With --shape: shaped ÷ unshaped per format and on small/, small/ against loop32, and the
// floor from the runs straight to the server only (loop2 through the shaped proxy is not used).
func TestIssueRowsShaped(t *testing.T) {
	o := &options{formats: []string{formatPlain}, shape: true, small: true, rounds: 1,
		variants: []string{variantS3io, variantS3ioUnshaped, variantLoop2, variantLoop32, variantS3ioDirect, variantLoop2Direct, variantFloor}}
	small := func(variant string, wall float64) runResult { return res(1, prefixSmall, variant, wall, 1, 1, 100) }
	b := fixture(o,
		res(1, prefixMemory, variantFloor, 3, 6, 0, 900),
		res(1, formatPlain, variantS3io, 2.5, 9, 1, 180),           // 80 MB/s
		res(1, formatPlain, variantS3ioUnshaped, 2, 9, 1, 190),     // 100 MB/s: 0.80
		res(1, formatPlain, variantLoop2, 4, 20, 20, 60),           // shaped: not the floor's
		res(1, formatPlain, variantLoop32, 1, 3, 1, 60),            // 200 MB/s
		res(1, formatPlain, variantS3ioDirect, 2, 9, 1, 170),       // 100 MB/s, 2 s
		res(1, formatPlain, variantLoop2Direct, 1.5, 1.5, 0.5, 60), // floor (6 + 1.5 + 0.5) / 2 = 4 s: 2.00
		small(variantS3io, 4),                                      // 50 MB/s
		small(variantS3ioUnshaped, 2),                              // 100 MB/s: 0.50
		small(variantLoop32, 4.2),                                  // 47.6 MB/s: 1.05
		small(variantLoop2, 40),
	)
	b.results[1].otherCPU = 1 // s3io shaped on plain/ competed with other processes
	checkRows(t, b.issueRows(), []string{"plain", "small"}, [][]string{
		{"s3io on loopback (s3io-direct)", "100 MB/s, 2.00 s", "", ""},
		{"two-core floor = (floor CPU s + loop2-direct CPU s + its server's CPU s) / 2", "(6.00 + 1.50 + 0.50) / 2 = 4.00 s", "", ""},
		{"s3io ÷ two-core floor (floor s ÷ s3io-direct wall s)", "2.00× met", "", "≥ 0.85 plain, ≥ 0.90 gzip and zstd"},
		{"s3io ÷ floor without the server, (floor CPU s + loop2-direct CPU s) / 2", "3.75 s: 1.88×", "", ""},
		{"cores busy: s3io-direct's process, and with the server's CPU time", "4.50, 5.00", "", ""},
		{"s3io through the proxy, unshaped (s3io-unshaped)", "100 MB/s", "100 MB/s", ""},
		{"s3io through the proxy, shaped (s3io)", "80 MB/s", "50 MB/s", ""},
		{"shaped ÷ unshaped", "0.80× **missed**", "0.50×", "≥ 0.90 (small/: against loop32, below)"},
		{"loop32 through the proxy, shaped", "", "48 MB/s", ""},
		{"s3io shaped ÷ loop32 shaped", "", "1.05× met", "≥ 0.90"},
		{"peak RSS of s3io, highest run", "180 MiB", "100 MiB", "< 256 MiB"},
		{"peak RSS of s3io-unshaped, highest run", "190 MiB", "100 MiB", "< 256 MiB"},
		{"peak RSS of s3io-direct, highest run", "170 MiB", "", "< 256 MiB"},
	}, []string{
		"highest peak RSS of any s3io run: 190 MiB (s3io-unshaped on plain/, round 1), under 256 MiB",
		"**loaded runs: 1 of the 11 kept** (other processes took more than a fifth of a core during them; foreign load, above): the ratios are not this machine's alone",
	})
}

// With --shape, a floor row without its loopback runs says that it needs them.
func TestIssueRowsShapedFloorMissing(t *testing.T) {
	o := &options{formats: []string{formatPlain}, shape: true, rounds: 1, variants: []string{variantS3io, variantLoop2, variantFloor}}
	b := fixture(o, res(1, prefixMemory, variantFloor, 3, 6, 0, 900), res(1, formatPlain, variantS3io, 5, 9, 1, 200), res(1, formatPlain, variantLoop2, 2, 1.5, 0.5, 60))
	got := b.issueRows()
	if want := "two-core floor = (floor CPU s + loop2-direct CPU s + its server's CPU s) / 2: " +
		"loop2-direct not selected (--variants; with --shape the floor rows use the runs straight to the server)"; !slices.Contains(got.notes, want) {
		t.Errorf("notes %q lack %q", got.notes, want)
	}
	if r := got.rows[1]; r[1] != "—" {
		t.Errorf("floor row %q computed from loop2 through the shaped proxy", r)
	}
}

// s3io-batches, when it ran: records/s against s3io's and loop2's; its peak RSS counts.
func TestIssueRowsBatches(t *testing.T) {
	o := &options{formats: []string{formatPlain}, variants: []string{variantS3io, variantLoop2, variantS3ioBatches}, rounds: 1}
	b := fixture(o,
		res(1, formatPlain, variantS3io, 5, 9, 1, 200),        // 0.20 M records/s
		res(1, formatPlain, variantS3ioBatches, 2, 5, 1, 260), // 0.50 M records/s: 2.50, 0.40
		res(1, formatPlain, variantLoop2, 0.8, 1.5, 0.5, 60),  // 1.25 M records/s
	)
	got := b.issueRows()
	want := [][]string{
		{"s3io-batches (ReadBatches)", "0.50 M records/s", ""},
		{"s3io-batches ÷ s3io, records/s", "2.50× met", "≥ 2.00"},
		{"s3io-batches ÷ loop2, records/s", "0.40× **missed**", "≥ 0.50"},
		{"peak RSS of s3io, highest run", "200 MiB", "< 256 MiB"},
		{"peak RSS of s3io-batches, highest run", "**260 MiB**", "< 256 MiB"},
	}
	checkRows(t, &rowsTable{cols: got.cols, rows: got.rows[5:], notes: got.notes}, []string{"plain"}, want, []string{
		"two-core floor = (floor CPU s + loop2 CPU s + its server's CPU s) / 2: floor not selected (--variants)",
		"s3io ÷ two-core floor (floor s ÷ s3io wall s): floor not selected (--variants)",
		"s3io ÷ floor without the server, (floor CPU s + loop2 CPU s) / 2: floor not selected (--variants)",
		"shaped ÷ unshaped, and small objects against loop32: need --shape",
		"highest peak RSS of any s3io run: 260 MiB (s3io-batches on plain/, round 1), **not under** 256 MiB",
	})
	// Absent, s3io-batches has no rows and no notes.
	o.variants = []string{variantS3io, variantLoop2}
	for _, r := range fixture(o, res(1, formatPlain, variantS3io, 5, 9, 1, 200)).issueRows().rows {
		if strings.Contains(r[0], variantS3ioBatches) {
			t.Errorf("row %q without s3io-batches runs", r)
		}
	}
}

// The report section renders the table with a column per dataset and the notes below it.
func TestRatiosRendering(t *testing.T) {
	o := &options{formats: []string{formatPlain}, variants: []string{variantS3io, variantLoop2, variantFloor}, rounds: 1}
	b := fixture(o, res(1, prefixMemory, variantFloor, 3, 6, 0, 900), res(1, formatPlain, variantS3io, 5, 9, 1, 200),
		res(1, formatPlain, variantLoop2, 2, 1.5, 0.5, 60))
	var w strings.Builder
	b.ratios(&w)
	for _, want := range []string{
		"\n## Issue 20's rows: ratios of medians over 1 round(s) of this run\n",
		"\n| row | plain/ | target |\n|---|---:|---|\n",
		"| s3io ÷ two-core floor (floor s ÷ s3io wall s) | 0.80× **missed** | ≥ 0.85 plain, ≥ 0.90 gzip and zstd |\n",
		"\n- shaped ÷ unshaped, and small objects against loop32: need --shape\n- highest peak RSS",
	} {
		if !strings.Contains(w.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, w.String())
		}
	}
}

// Every round runs each variant once per prefix, in an order rotated from round to round;
// loop2-direct reads only the formats, s3io-unshaped small/ too.
func TestJobsAlternate(t *testing.T) {
	o := &options{formats: []string{formatPlain, formatGzip}, small: true, shape: true, rounds: 3,
		variants: []string{variantS3io, variantS3ioUnshaped, variantLoop2Direct, variantFloor}}
	first := map[string][]string{} // prefix → the first variant of each round
	seen := map[job]int{}
	for _, j := range o.jobs() {
		k := job{j.round, j.prefix, ""}
		if seen[k] == 0 {
			first[j.prefix] = append(first[j.prefix], j.variant)
		}
		seen[k]++
	}
	for _, p := range []string{formatPlain, formatGzip} {
		for r := 1; r <= 3; r++ {
			if n := seen[job{r, p, ""}]; n != 3 {
				t.Errorf("round %d %s/: %d runs, want 3 (s3io, s3io-unshaped, loop2-direct)", r, p, n)
			}
		}
		if f := first[p]; len(f) != 3 || f[0] == f[1] || f[1] == f[2] {
			t.Errorf("%s/: first variants by round %q, want a rotation", p, f)
		}
	}
	for r := 1; r <= 3; r++ {
		if n := seen[job{r, prefixSmall, ""}]; n != 2 {
			t.Errorf("round %d small/: %d runs, want 2 (s3io, s3io-unshaped)", r, n)
		}
		if n := seen[job{r, prefixMemory, ""}]; n != 1 {
			t.Errorf("round %d memory/: %d runs, want the floor's", r, n)
		}
	}
}
