package fetch

import (
	"io"
	"sync/atomic"
)

// Stream returns the bytes of of in order, from its first byte to the object's end.
func (of *ObjectFetch) Stream() *Stream {
	s := &Stream{of: of}
	s.pos.Store(of.from)
	return s
}

// Stream is an io.Reader over one object's fetched parts. It is read by one goroutine;
// Consumed may be called from another (a stream decoded in chunks is read by its feeder
// while its framing goroutine reports progress).
type Stream struct {
	of     *ObjectFetch
	cur    *part
	curOff int
	pos    atomic.Int64 // object offset of the next byte Read returns
	done   bool         // the planned parts are all consumed
	tail   *PinnedReader
	check  objectCheck
}

func (s *Stream) Read(p []byte) (int, error) {
	for {
		if s.cur != nil {
			if s.curOff < len(s.cur.buf) {
				n := copy(p, s.cur.buf[s.curOff:])
				s.curOff += n
				s.pos.Add(int64(n))
				return n, nil
			}
			s.of.release(s.cur)
			s.cur = nil
		}
		if s.done {
			return s.readTail(p)
		}
		var pt *part
		var ok bool
		waited := false
		select {
		case pt, ok = <-s.of.parts:
		default:
			waited = true
			select {
			case pt, ok = <-s.of.parts:
			case <-s.of.ctx.Done():
				return 0, &ReadError{Offset: s.pos.Load(), Attempts: 1, Err: s.of.ctx.Err()}
			}
		}
		if !ok {
			s.done = true
			continue
		}
		select {
		case <-pt.done:
		default:
			waited = true
			<-pt.done
		}
		// What the reader waited for tells the budget whether more bytes in flight would
		// have helped.
		s.of.fetcher().budget.partRead(waited)
		if pt.err == nil {
			// A part's pieces are checked before any of its bytes is returned: a corrupt
			// composite part, or an object's last, fails before its records are framed.
			pt.err = s.check.parts(s.of, pt)
		}
		if pt.err != nil {
			s.of.release(pt)
			return 0, pt.err
		}
		s.cur, s.curOff = pt, 0
	}
}

// readTail streams what lies past the planned range, in requests of the range's tail
// window.
func (s *Stream) readTail(p []byte) (int, error) {
	if s.tail == nil {
		of := s.of
		pos := s.pos.Load()
		if pos >= of.obj.Size || of.planEnd >= of.obj.Size {
			return 0, io.EOF
		}
		s.tail = of.reads().OpenWindowed(of.ctx, of.obj, pos, of.obj.Size, of.tail)
	}
	n, err := s.tail.Read(p)
	s.pos.Add(int64(n))
	return n, err
}

// Consumed returns how many bytes Read has returned.
func (s *Stream) Consumed() int64 { return s.pos.Load() - s.of.from }

// End tells the stream that its reader framed every record it wants from it. A read that
// verifies its object then takes the planned parts it has not consumed (a tar's
// end-of-archive blocks, a zip's central directory: fetched already, as every part of an
// object read whole is), so that the check reaches the object's last byte, and End
// returns what the check found there (a *ChecksumError), or a failed part's error. Only a
// stream that was ended is counted as missing a checksum or unchecked when it closes.
func (s *Stream) End() error {
	s.check.finished = true
	if !s.check.start(s.of) {
		return nil
	}
	for !s.check.ended {
		if s.cur != nil {
			// Skipped, not copied: its bytes were checked when the part was taken.
			s.pos.Add(int64(len(s.cur.buf) - s.curOff))
			s.curOff = len(s.cur.buf)
		}
		if s.done && s.cur == nil {
			return nil
		}
		// An empty read takes the next part, checking it, and returns none of its bytes.
		if _, err := s.Read(nil); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
	return nil
}

// Close releases what the stream holds and drops the object's remaining parts.
func (s *Stream) Close() {
	s.check.close(s.of)
	if s.cur != nil {
		s.of.release(s.cur)
		s.cur = nil
	}
	s.of.Drop()
	if s.tail != nil {
		s.tail.Close()
		s.of.fetcher().account(s.tail)
		s.tail = nil
	}
}
