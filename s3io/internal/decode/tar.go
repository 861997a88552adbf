package decode

import (
	"archive/tar"
	"errors"
	"io"
)

// tarEntries yields the regular files of a tar stream.
type tarEntries struct {
	tr  *tar.Reader
	in  *tarInput
	src *source
	dec entryDecoder
}

func (d *Decompressors) openTar(mode Compression, stream io.Reader) Entries {
	in := &tarInput{r: stream}
	return &tarEntries{tr: tar.NewReader(in), in: in, src: &d.src, dec: entryDecoder{mode: mode, kind: "tar", outer: d}}
}

// tarInput remembers whether the stream ended and the last bytes it passed: archive/tar
// reports io.EOF both at the end-of-archive marker and where a stream cut at a block
// boundary simply stops, and only the second is truncation.
type tarInput struct {
	r    io.Reader
	eof  bool
	last [2 * 512]byte // the last bytes read, rotated in
	n    int64
}

func (t *tarInput) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if n >= len(t.last) {
		copy(t.last[:], p[n-len(t.last):n])
	} else if n > 0 {
		copy(t.last[:], t.last[n:])
		copy(t.last[len(t.last)-n:], p[:n])
	}
	t.n += int64(n)
	if err == io.EOF {
		t.eof = true
	}
	return n, err
}

// endedWithoutMarker reports a stream that ended where a header was due, without the two
// zero blocks that end an archive.
func (t *tarInput) endedWithoutMarker() bool {
	if !t.eof || t.n == 0 {
		return false
	}
	if t.n < int64(len(t.last)) {
		return true
	}
	for _, b := range t.last {
		if b != 0 {
			return true
		}
	}
	return false
}

func (t *tarEntries) Next() (Entry, error) {
	for {
		h, err := t.tr.Next()
		switch {
		case err == io.EOF && t.in.endedWithoutMarker():
			return Entry{}, corruptError("tar", errors.New("the archive ends without its end-of-archive marker: it is cut short"))
		case err == io.EOF:
			return Entry{}, io.EOF
		case err != nil:
			return Entry{}, archiveError("tar", err, t.src)
		}
		if h.Typeflag != tar.TypeReg {
			continue // directories, links, devices: no records
		}
		r, err := t.dec.open(h.Name, tarBody{t.tr, t.src})
		if err != nil {
			return Entry{}, err
		}
		return Entry{Name: h.Name, R: r}, nil
	}
}

// tarBody marks a body cut short as corrupt, unless the fetch failed.
type tarBody struct {
	tr  *tar.Reader
	src *source
}

func (b tarBody) Read(p []byte) (int, error) {
	n, err := b.tr.Read(p)
	return n, archiveError("tar", err, b.src)
}
