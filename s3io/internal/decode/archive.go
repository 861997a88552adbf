package decode

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// Archives: a tar (stored, or inside any codec) or a zip object is read entry by entry, in
// archive order, regular files only. Each entry is decoded by its own method (a zip entry's
// compression method; in auto mode, an entry's own name and magic bytes, so a tar of .gz
// logs reads as lines); the entries are framed one after another as one stream.

// RangeReader reads the bytes [from, to) of the object being decoded, pinned like every
// other read: a zip's central directory is read with it.
type RangeReader func(from, to int64) ([]byte, error)

// ObjectInfo is what decoding an archive needs to know of its object besides its bytes.
type ObjectInfo struct {
	Key       string
	Size      int64       // stored bytes
	ReadRange RangeReader // for a zip's central directory
}

// OpenEntries opens an object for framing: its entries when it is an archive (a stored tar
// or zip, or a tar inside a codec), else nil and its decoded stream. comp is the format
// Detect found (Tar or Zip for a stored archive, the codec otherwise).
func (d *Decompressors) OpenEntries(mode Compression, obj ObjectInfo, src io.Reader) (entries Entries, stream io.Reader, comp Compression, err error) {
	stream, comp, err = d.Open(mode, obj.Key, src)
	if err != nil {
		return nil, nil, comp, err
	}
	switch {
	case comp == Zip:
		entries, err = d.openZip(mode, obj, stream)
		return entries, nil, comp, err
	case comp == Tar:
		return d.openTar(mode, stream), nil, comp, nil
	case comp == None:
		return nil, stream, comp, nil
	}
	// A codec: a tar inside is known by its first header.
	head := make([]byte, MagicLen)
	n, err := io.ReadFull(stream, head)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return nil, nil, comp, err
	}
	stream = io.MultiReader(bytes.NewReader(head[:n]), stream)
	switch {
	case IsTar(head[:n]):
		return d.openTar(mode, stream), nil, comp, nil
	case NamesTar(obj.Key) && (n == 0 || n == MagicLen && allZero(head)):
		return d.openTar(mode, stream), nil, comp, nil // an empty archive: no entries
	case NamesTar(obj.Key):
		// Framed as text, a damaged header would come out as records.
		return nil, nil, comp, corruptError("tar", fmt.Errorf("the object is named as a tar, but its first %d decoded bytes are not a tar header (its checksum does not match)", n))
	}
	return nil, stream, comp, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// entryDecoder decodes an archive's entries by their own names and magic bytes, in auto
// mode; it holds the decoders of one entry at a time.
type entryDecoder struct {
	mode  Compression
	kind  string // "tar" or "zip", for messages
	outer *Decompressors
	dec   *Decompressors
}

func (e *entryDecoder) open(name string, r io.Reader) (io.Reader, error) {
	if e.mode != Auto {
		return r, nil // an explicit mode names the archive's codec, not its entries'
	}
	if e.dec == nil {
		e.dec = e.outer.inner(&e.outer.entries)
	}
	stream, comp, err := e.dec.Open(Auto, name, r)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s entry %q: %w", e.kind, name, err)
	case comp == Tar, comp == Zip:
		return nil, fmt.Errorf("%w: %s entry %q is itself a %s archive, which s3io does not read inside an archive; unpack the outer archive", ErrUnsupported, e.kind, name, comp)
	}
	return entryStream{stream, e.kind, name}, nil
}

// entryStream names its entry in the errors it returns.
type entryStream struct {
	r          io.Reader
	kind, name string
}

func (s entryStream) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("%s entry %q: %w", s.kind, s.name, err)
	}
	return n, err
}

// archiveError is decodeError for an archive's own structure: an error its codec already
// classified (corruption, an unsupported frame) passes as it is.
func archiveError(format string, err error, src *source) error {
	if errors.Is(err, ErrCorrupt) || errors.Is(err, ErrUnsupported) {
		return err
	}
	return decodeError(format, err, src)
}

// inner returns the Decompressors *slot holds for what an archive holds, made with d's
// limits the first time.
func (d *Decompressors) inner(slot **Decompressors) *Decompressors {
	if *slot != nil && (*slot).MaxWindow != d.MaxWindow {
		(*slot).Close()
		*slot = nil
	}
	if *slot == nil {
		*slot = &Decompressors{MaxWindow: d.MaxWindow}
	}
	return *slot
}
