package main

import (
	"fmt"
	"slices"
	"strings"
)

// The targets issue 20 sets for its rows.
const (
	targetShaped      = 0.9  // s3io shaped ≥ 0.9 × s3io through the same proxy unshaped
	targetSmallLoop32 = 0.9  // small/: s3io shaped ≥ 0.9 × loop32 shaped
	targetFloorPlain  = 0.85 // plain: s3io on loopback ≥ 0.85 of the two-core floor's speed
	targetFloorCodec  = 0.9  // gzip and zstd: ≥ 0.9 of it
	targetBatchesRead = 2.0  // s3io-batches records/s ≥ 2 × s3io's
	targetBatchesLoop = 0.5  // s3io-batches records/s ≥ 0.5 × loop2's
	targetRSSMiB      = 256  // every s3io run's peak RSS below 256 MiB
	targetVerify      = 0.9  // s3io-verify ≥ 0.9 × s3io through the same proxy (issue 33)
)

// rowsTable is issue 20's table: a column per dataset (the formats, then small/), rows of
// medians and of ratios of medians, each with its target, and notes saying why a row or a
// cell could not be computed.
type rowsTable struct {
	cols  []string
	rows  [][]string // label, a cell per column, target
	notes []string
}

// rowsBuilder builds a rowsTable from a run's results.
type rowsBuilder struct {
	b *benchRun
	t *rowsTable
}

// na marks a cell a row has no value for by definition (the floor on small/), as opposed to
// one it could not compute ("—", with a note).
const na = ""

// need is the cell of variant's runs on prefix, or nil and why there is none. A cell whose
// runs counted other records than were generated is returned with a note.
func (rb *rowsBuilder) need(prefix, variant string) (*cell, string) {
	if !slices.Contains(rb.b.opts.variants, variant) {
		if rb.b.opts.shape && (variant == variantS3ioDirect || variant == variantLoop2Direct) {
			return nil, variant + " not selected (--variants; with --shape the floor rows use the runs straight to the server)"
		}
		return nil, variant + " not selected (--variants)"
	}
	c := rb.b.cell(prefix, variant)
	switch {
	case !c.ran():
		return nil, fmt.Sprintf("%s did not run on %s/", variant, prefix)
	case len(c.ok) == 0:
		return nil, fmt.Sprintf("no run of %s on %s/ succeeded", variant, prefix)
	case !c.complete():
		rb.note(fmt.Sprintf("%s on %s/: %s — the rows using it are suspect", variant, prefix, c.checkText()))
	}
	return c, ""
}

func (rb *rowsBuilder) note(n string) {
	if !slices.Contains(rb.t.notes, n) {
		rb.t.notes = append(rb.t.notes, n)
	}
}

// add appends a row whose cells value computes: a text, or "" and the reasons it is
// missing, which become one note for the row; target(col) is "" where the row has none.
func (rb *rowsBuilder) add(label, target string, value func(col string) (text string, missing []string)) {
	r := []string{label}
	var why []string
	for _, col := range rb.t.cols {
		text, missing := value(col)
		switch {
		case text != "":
		case len(missing) > 0:
			text = "—"
			for _, m := range missing {
				if !slices.Contains(why, m) {
					why = append(why, m)
				}
			}
		}
		r = append(r, text)
	}
	rb.t.rows = append(rb.t.rows, append(r, target))
	if len(why) > 0 {
		rb.note(fmt.Sprintf("%s: %s", label, strings.Join(why, "; ")))
	}
}

// metText is a ratio against its target: "0.97× met", "0.58× **missed**".
func metText(ratio, target float64) string {
	if ratio >= target {
		return fmt.Sprintf("%.2f× met", ratio)
	}
	return fmt.Sprintf("%.2f× **missed**", ratio)
}

// isS3ioVariant reports whether a variant is an s3io pipeline, whose peak RSS the target
// bounds.
func isS3ioVariant(v string) bool { return strings.HasPrefix(v, variantS3io) }

// loopbackVariants are the runs the two-core floor row compares: straight to the server,
// which with --shape means s3io-direct and loop2-direct.
func (o *options) loopbackVariants() (s3ioV, loopV string) {
	if o.shape {
		return variantS3ioDirect, variantLoop2Direct
	}
	return variantS3io, variantLoop2
}

// issueRows computes issue 20's rows from the run's results: the two-core floor and s3io
// against it, shaped ÷ unshaped through the same proxy, small/ against loop32, s3io-batches
// against s3io and loop2 when it ran, and every s3io variant's highest peak RSS.
func (b *benchRun) issueRows() *rowsTable {
	o := b.opts
	rb := &rowsBuilder{b: b, t: &rowsTable{}}
	rb.t.cols = append(rb.t.cols, o.formats...)
	if o.small {
		rb.t.cols = append(rb.t.cols, prefixSmall)
	}
	if len(rb.t.cols) == 0 {
		return rb.t
	}
	isFormat := func(col string) bool { return col != prefixSmall }
	// each computes a cell from the cells of some variants on col (the floor's on memory/);
	// none where one of them does not read col.
	each := func(variants []string, f func(col string, cs []*cell) string) func(string) (string, []string) {
		return func(col string) (string, []string) {
			var cs []*cell
			var missing []string
			for _, v := range variants {
				p := col
				if v == variantFloor {
					p = prefixMemory
				} else if !reads(col, v) {
					return na, nil
				}
				c, why := rb.need(p, v)
				if c == nil {
					missing = append(missing, why)
				}
				cs = append(cs, c)
			}
			if len(missing) > 0 {
				return "", missing
			}
			return f(col, cs), nil
		}
	}
	onlyFormats := func(v func(string) (string, []string)) func(string) (string, []string) {
		return func(col string) (string, []string) {
			if !isFormat(col) {
				return na, nil
			}
			return v(col)
		}
	}
	onlySmall := func(v func(string) (string, []string)) func(string) (string, []string) {
		return func(col string) (string, []string) {
			if isFormat(col) {
				return na, nil
			}
			return v(col)
		}
	}

	// The two-core floor: Beam's per-element work (the floor) and the fetch-and-decode work
	// (the 2-reader loop and the server it reads from, on the same cores) spread perfectly
	// over two cores, against s3io's wall time on loopback.
	if len(o.formats) > 0 {
		s3ioV, loopV := o.loopbackVariants()
		twoCore := func(floor, loop *cell) (float64, string) {
			fs, ls := floor.stats(), loop.stats()
			if ls.server < 0 {
				return -1, ""
			}
			t := (fs.cpu + ls.cpu + ls.server) / 2
			return t, fmt.Sprintf("(%.2f + %.2f + %.2f) / 2 = %.2f s", fs.cpu, ls.cpu, ls.server, t)
		}
		rb.add(fmt.Sprintf("s3io on loopback (%s)", s3ioV), na, onlyFormats(each([]string{s3ioV}, func(_ string, cs []*cell) string {
			s := cs[0].stats()
			return fmt.Sprintf("%.0f MB/s, %.2f s", s.mbps, s.wall)
		})))
		floorValue := each([]string{variantFloor, loopV}, func(_ string, cs []*cell) string {
			_, text := twoCore(cs[0], cs[1])
			return text
		})
		rb.add(fmt.Sprintf("two-core floor = (floor CPU s + %s CPU s + its server's CPU s) / 2", loopV), na, onlyFormats(func(col string) (string, []string) {
			text, missing := floorValue(col)
			if text == "" && missing == nil {
				missing = []string{fmt.Sprintf("the server's CPU time during %s on %s/ is unknown", loopV, col)}
			}
			return text, missing
		}))
		ratio := each([]string{variantFloor, loopV, s3ioV}, func(col string, cs []*cell) string {
			t, _ := twoCore(cs[0], cs[1])
			if t < 0 {
				return ""
			}
			target := targetFloorCodec
			if col == formatPlain {
				target = targetFloorPlain
			}
			return metText(t/cs[2].stats().wall, target)
		})
		rb.add(fmt.Sprintf("s3io ÷ two-core floor (floor s ÷ %s wall s)", s3ioV),
			fmt.Sprintf("≥ %.2f plain, ≥ %.2f gzip and zstd", targetFloorPlain, targetFloorCodec), onlyFormats(func(col string) (string, []string) {
				text, missing := ratio(col)
				if text == "" && missing == nil {
					missing = []string{fmt.Sprintf("the server's CPU time during %s on %s/ is unknown", loopV, col)}
				}
				return text, missing
			}))
		// The floor without the server's CPU time: Beam's work and the loop's alone, as a
		// reader that measures only the pipeline's process would compute it. The server's
		// work still takes the same cores during s3io's read, so this floor is the stricter.
		rb.add(fmt.Sprintf("s3io ÷ floor without the server, (floor CPU s + %s CPU s) / 2", loopV), na, onlyFormats(each([]string{variantFloor, loopV, s3ioV}, func(_ string, cs []*cell) string {
			fs, ls := cs[0].stats(), cs[1].stats()
			t := (fs.cpu + ls.cpu) / 2
			return fmt.Sprintf("%.2f s: %.2f×", t, t/cs[2].stats().wall)
		})))
		rb.add(fmt.Sprintf("cores busy: %s's process, and with the server's CPU time", s3ioV), na, onlyFormats(each([]string{s3ioV}, func(_ string, cs []*cell) string {
			s := cs[0].stats()
			if s.server < 0 {
				return fmt.Sprintf("%.2f", s.busy)
			}
			return fmt.Sprintf("%.2f, %.2f", s.busy, (s.cpu+s.server)/s.wall)
		})))
	}

	// Shaped ÷ unshaped through the same proxy, and small/ against the 32-GET loop.
	mbps := func(_ string, cs []*cell) string { return fmt.Sprintf("%.0f MB/s", cs[0].stats().mbps) }
	divide := func(target float64) func(string, []*cell) string {
		return func(_ string, cs []*cell) string { return metText(cs[0].stats().mbps/cs[1].stats().mbps, target) }
	}
	if o.shape {
		rb.add("s3io through the proxy, unshaped (s3io-unshaped)", na, each([]string{variantS3ioUnshaped}, mbps))
		rb.add("s3io through the proxy, shaped (s3io)", na, each([]string{variantS3io}, mbps))
		// On small/ the target is loop32's, below: a latency-bound read is not expected to
		// keep its unshaped speed.
		rb.add("shaped ÷ unshaped", fmt.Sprintf("≥ %.2f (small/: against loop32, below)", targetShaped), each([]string{variantS3io, variantS3ioUnshaped}, func(col string, cs []*cell) string {
			if !isFormat(col) {
				return fmt.Sprintf("%.2f×", cs[0].stats().mbps/cs[1].stats().mbps)
			}
			return divide(targetShaped)(col, cs)
		}))
		if o.small {
			rb.add("loop32 through the proxy, shaped", na, onlySmall(each([]string{variantLoop32}, mbps)))
			rb.add("s3io shaped ÷ loop32 shaped", fmt.Sprintf("≥ %.2f", targetSmallLoop32), onlySmall(each([]string{variantS3io, variantLoop32}, divide(targetSmallLoop32))))
		} else {
			rb.note("s3io shaped ÷ loop32 shaped on small objects: needs --small")
		}
	} else {
		rb.note("shaped ÷ unshaped, and small objects against loop32: need --shape")
	}

	// ReadBatches against Read and against the 2-reader loop, in records/s, where it ran.
	if slices.Contains(o.variants, variantS3ioBatches) || slices.ContainsFunc(b.results, func(r runResult) bool { return r.variant == variantS3ioBatches }) {
		recs := func(_ string, cs []*cell) string {
			return fmt.Sprintf("%.2f M records/s", cs[0].stats().recsPerSec/1e6)
		}
		perRecord := func(target float64) func(string, []*cell) string {
			return func(_ string, cs []*cell) string {
				return metText(cs[0].stats().recsPerSec/cs[1].stats().recsPerSec, target)
			}
		}
		rb.add("s3io-batches (ReadBatches)", na, each([]string{variantS3ioBatches}, recs))
		rb.add("s3io-batches ÷ s3io, records/s", fmt.Sprintf("≥ %.2f", targetBatchesRead), each([]string{variantS3ioBatches, variantS3io}, perRecord(targetBatchesRead)))
		rb.add("s3io-batches ÷ loop2, records/s", fmt.Sprintf("≥ %.2f", targetBatchesLoop), each([]string{variantS3ioBatches, variantLoop2}, perRecord(targetBatchesLoop)))
	}

	// VerifyChecksums against the same read without it, and the CPU it adds per GiB stored.
	if slices.Contains(o.variants, variantS3ioVerify) {
		rb.add("s3io with VerifyChecksums (s3io-verify)", na, onlyFormats(each([]string{variantS3ioVerify}, func(_ string, cs []*cell) string {
			return fmt.Sprintf("%.0f MB/s, %d objects verified", cs[0].stats().mbps, cs[0].ok[0].child.ChecksumsVerified)
		})))
		rb.add("s3io-verify ÷ s3io", fmt.Sprintf("≥ %.2f", targetVerify), onlyFormats(each([]string{variantS3ioVerify, variantS3io}, divide(targetVerify))))
		rb.add("CPU s per GiB stored, s3io-verify − s3io (medians)", na, onlyFormats(each([]string{variantS3ioVerify, variantS3io}, func(_ string, cs []*cell) string {
			if cs[0].want == nil || cs[0].want.StoredBytes == 0 {
				return ""
			}
			gib := float64(cs[0].want.StoredBytes) / (1 << 30)
			return fmt.Sprintf("%+.3f (%.2f − %.2f s)", (cs[0].stats().cpu-cs[1].stats().cpu)/gib, cs[0].stats().cpu, cs[1].stats().cpu)
		})))
	}

	// Peak RSS: the highest of any run, per s3io variant.
	for _, v := range o.variants {
		if !isS3ioVariant(v) {
			continue
		}
		rb.add(fmt.Sprintf("peak RSS of %s, highest run", v), fmt.Sprintf("< %d MiB", targetRSSMiB), each([]string{v}, func(_ string, cs []*cell) string {
			m := cs[0].stats().rssMaxMiB
			if m >= targetRSSMiB {
				return fmt.Sprintf("**%.0f MiB**", m)
			}
			return fmt.Sprintf("%.0f MiB", m)
		}))
	}
	rb.rssNote()
	rb.loadNote()
	return rb.t
}

// loadNote says how many of the runs kept were disturbed by other processes: their ratios
// are not the machine's.
func (rb *rowsBuilder) loadNote() {
	loaded := 0
	for i := range rb.b.results {
		if rb.b.results[i].loaded() {
			loaded++
		}
	}
	if loaded > 0 {
		rb.note(fmt.Sprintf("**loaded runs: %d of the %d kept** (other processes took more than a fifth of a core during them; foreign load, above): the ratios are not this machine's alone", loaded, len(rb.b.results)))
	}
}

// rssNote says which s3io run, over every prefix read (codec prefixes and big/ included),
// peaked highest, against the target.
func (rb *rowsBuilder) rssNote() {
	var top *runResult
	for i := range rb.b.results {
		if r := &rb.b.results[i]; r.ok() && isS3ioVariant(r.variant) && (top == nil || r.child.VmHWMKiB > top.child.VmHWMKiB) {
			top = r
		}
	}
	if top == nil {
		return
	}
	mib, verdict := float64(top.child.VmHWMKiB)/1024, "under"
	if mib >= targetRSSMiB {
		verdict = "**not under**"
	}
	rb.note(fmt.Sprintf("highest peak RSS of any s3io run: %.0f MiB (%s on %s/, round %d), %s %d MiB", mib, top.variant, top.prefix, top.round, verdict, targetRSSMiB))
}

// ratios writes issue 20's table.
func (b *benchRun) ratios(w *strings.Builder) {
	t := b.issueRows()
	if len(t.rows) == 0 && len(t.notes) == 0 {
		return
	}
	o := b.opts
	s3ioV, loopV := o.loopbackVariants()
	fmt.Fprintf(w, "\n## Issue 20's rows: ratios of medians over %d round(s) of this run\n\n", o.rounds)
	fmt.Fprintf(w, "Every figure is a median over this run's rounds, and a ratio divides two of them. Each round ran every variant on a prefix one after the other, "+
		"in an order rotated from round to round, so that slow drift reaches every variant alike. "+
		"The two-core floor is the wall time of a read that spread Beam's per-element work and the fetch-and-decode work perfectly over 2 cores: "+
		"floor CPU s is beam.Run's CPU time in the floor run (Beam emitting the same records from memory into the same counting sink; generating them is left out); "+
		"%s CPU s is that whole child process's CPU time (2 concurrent loops of GET, decode and newline count, straight to the server), "+
		"and its server's CPU s is the S3 server's CPU time during the run plus this process's, which share the cores: s3io's wall time pays for the server's work too. "+
		"\"s3io ÷ two-core floor\" is the floor's time over %s's wall time (child start to exit): 1 is as fast as the floor.", loopV, s3ioV)
	if o.shape {
		w.WriteString(" With --shape the floor rows use the runs straight to the server only (s3io-direct, loop2-direct); " +
			"\"shaped ÷ unshaped\" divides s3io through the shaping proxy by s3io through the same proxy with shaping off.")
	}
	w.WriteString("\n\n")
	head := []string{"row"}
	align := "|---|"
	for _, c := range t.cols {
		head = append(head, c+"/")
		align += "---:|"
	}
	w.WriteString(row(append(head, "target")...))
	w.WriteString(align + "---|\n")
	for _, r := range t.rows {
		w.WriteString(row(r...))
	}
	if len(t.notes) > 0 {
		fmt.Fprintf(w, "\n- %s\n", strings.Join(t.notes, "\n- "))
	}
}
