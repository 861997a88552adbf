package fetch

// Handing an object over between fetchers. A runner moves work between a worker's reader
// instances at will: a split hands the members after the split point to a residual, a
// bundle ends while its reader has fetched ahead for a restriction that comes in another
// bundle. What the first instance fetched is worth as much to the second, so instead of
// dropping it, the first freezes the object (its fetcher stops issuing parts for it and stops
// counting the parts in its budget), and the second adopts it: the parts already fetched
// or in flight are read from it as before, and its own fetcher issues the rest. The bytes
// are fetched once, by whichever fetcher got there first.

// Freeze stops of's fetcher issuing parts for it and takes the parts it issued out of its
// budget (those still waiting for their answer are admitted into the pool alone): their
// buffers stay in the pool, where they count against the worker's memory cap, until a
// reader consumes them or the object is dropped. It unlinks of from the context Bind gave
// it, so that the end of the read that bound it does not cancel its requests. A frozen
// object waits for Adopt or Drop; a read of its stream meanwhile gets the parts issued and
// then waits. It waits for the scheduler to let go of the object.
func (of *ObjectFetch) Freeze() {
	if of.stopBind != nil {
		of.stopBind()
		of.stopBind = nil
	}
	f := of.fetcher()
	f.mu.Lock()
	of.mu.Lock()
	var done chan struct{}
	switch of.state {
	case queued:
		f.unqueue(of)
		of.state = frozen
	case issuing:
		of.freezing = true
		of.stopIssue()
		done = of.issueDone
	}
	of.mu.Unlock()
	f.mu.Unlock()
	if done != nil {
		<-done
	}
	of.mu.Lock()
	defer of.mu.Unlock()
	for _, p := range of.live {
		if p.b == nil {
			continue
		}
		switch p.stage {
		case admitted:
			p.b.give(p.class())
		case promised:
			p.b.unpromise(p.class())
		}
		p.b = nil
	}
}

// Adopt makes f the fetcher of of, which Freeze handed over: the parts of already issued
// count in f's budget from now on (beyond its limit if need be: their bytes are held
// already), and f issues the rest after every object queued before. gets, f's reads of of's
// bucket, makes those requests. The object must come from a fetcher of f's pool.
func (f *Fetcher) Adopt(gets *Gets, of *ObjectFetch) {
	if old := of.fetcher(); old.pool != f.pool {
		panic("fetch: an object is adopted by a fetcher of another pool")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	of.mu.Lock()
	defer of.mu.Unlock()
	of.f.Store(f)
	of.gets = gets
	for _, p := range of.live {
		if p.b != nil {
			continue
		}
		switch p.stage {
		case admitted:
			f.budget.count(0, p.class())
		case promised:
			f.budget.count(p.class(), 0)
		default:
			continue // abandoned: counted nowhere
		}
		p.b = f.budget
	}
	if of.state != frozen {
		return // issued whole, or dropped
	}
	if of.more() && of.ctx.Err() == nil {
		f.enqueue(of)
		return
	}
	of.state = finished
	close(of.parts)
}

// Fetched returns the bytes of the parts of issued so far: what a reader that adopts it will
// not request again.
func (of *ObjectFetch) Fetched() int64 {
	of.mu.Lock()
	defer of.mu.Unlock()
	return of.next - of.from
}
