package decode

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"

	"github.com/klauspost/compress/flate"
)

// Archives: a tar (stored, or inside any codec) or a zip object is read entry by entry, in
// archive order, regular files only. Each entry is decoded by its own method (a zip entry's
// compression method; in auto mode, an entry's own name and magic bytes, so a tar of .gz
// logs reads as lines); the entries are framed one after another as one stream.

// zipTailBytes is how much of a zip's end the first ranged GET fetches: the end of central
// directory record (22 bytes plus a comment of up to 64 KiB) and, for archives of up to
// about a thousand entries, the whole central directory.
const zipTailBytes = 128 << 10

// maxZipDirectoryBytes bounds the central directory held in memory (~100 bytes per entry:
// about a million entries).
const maxZipDirectoryBytes = 256 << 20

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
	if IsTar(head[:n]) {
		return d.openTar(mode, stream), nil, comp, nil
	}
	return nil, stream, comp, nil
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

// archiveError is decodeError for an archive's own structure: an error its codec already
// classified (corruption, an unsupported frame) passes as it is.
func archiveError(format string, err error, src *source) error {
	if errors.Is(err, ErrCorrupt) || errors.Is(err, ErrUnsupported) {
		return err
	}
	return decodeError(format, err, src)
}

// zipEntries yields the regular files of a zip, in the order of their local headers, read
// from the object's stream; the central directory comes from a ranged GET of the tail.
type zipEntries struct {
	at      *zipSource
	files   []*zip.File
	next    int
	dec     entryDecoder   // an entry's own codec, by its name (auto mode)
	methods *Decompressors // the zip compression methods beyond deflate
	cur     io.ReadCloser
}

func (d *Decompressors) openZip(mode Compression, obj ObjectInfo, stream io.Reader) (Entries, error) {
	at := &zipSource{fwd: stream, fetched: &d.src, size: obj.Size, readRange: obj.ReadRange, tailStart: obj.Size}
	zr, err := zip.NewReader(at, obj.Size)
	if err != nil {
		return nil, zipError(err, &d.src)
	}
	offsets, err := at.headerOffsets(len(zr.File))
	if err != nil {
		return nil, zipError(err, &d.src)
	}
	at.streaming = true
	z := &zipEntries{at: at, dec: entryDecoder{mode: mode, kind: "zip", outer: d}, methods: d.inner(&d.methods)}
	z.registerMethods(zr)
	type entry struct {
		f   *zip.File
		off int64
	}
	var files []entry
	for i, f := range zr.File {
		// Not directories or links; an entry zip wrote from a pipe (stdin) is data.
		if m := f.Mode(); !m.IsDir() && m&(fs.ModeSymlink|fs.ModeDevice|fs.ModeSocket|fs.ModeIrregular) == 0 && !strings.HasSuffix(f.Name, "/") {
			files = append(files, entry{f, offsets[i]})
		}
	}
	// Archive order is the order of the local headers, which the stream passes once.
	slices.SortStableFunc(files, func(a, b entry) int { return cmp.Compare(a.off, b.off) })
	for _, e := range files {
		z.files = append(z.files, e.f)
	}
	return z, nil
}

// zipError classifies what archive/zip reports: a format error is corruption, an unknown
// method is unsupported, a failed fetch is itself.
func zipError(err error, src *source) error {
	switch {
	case err == nil || err == io.EOF:
		return err
	case src.err != nil:
		return src.err
	case errors.Is(err, ErrUnsupported):
		return err
	case errors.Is(err, zip.ErrAlgorithm):
		return fmt.Errorf("%w: %v", ErrUnsupported, err)
	}
	var fe *fetchError
	if errors.As(err, &fe) {
		return fe.err
	}
	return corruptError("zip", err)
}

// The zip compression methods read besides store and deflate (APPNOTE 4.4.5).
const (
	zipBzip2 = 12
	zipLZMA  = 14
	zipZstd  = 93
	zipXz    = 95
)

func (z *zipEntries) registerMethods(zr *zip.Reader) {
	var fl io.ReadCloser
	zr.RegisterDecompressor(zip.Deflate, func(r io.Reader) io.ReadCloser {
		if fl == nil {
			fl = flate.NewReader(r)
		} else {
			_ = fl.(flate.Resetter).Reset(r, nil)
		}
		return io.NopCloser(fl)
	})
	for method, codec := range map[uint16]Compression{zipBzip2: Bzip2, zipZstd: Zstd, zipXz: Xz} {
		zr.RegisterDecompressor(method, func(r io.Reader) io.ReadCloser {
			s, _, err := z.methods.Open(codec, "", r)
			if err != nil {
				return io.NopCloser(errReader{err})
			}
			return io.NopCloser(s)
		})
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func (z *zipEntries) Next() (Entry, error) {
	if z.cur != nil {
		z.cur.Close()
		z.cur = nil
	}
	if z.next == len(z.files) {
		return Entry{}, io.EOF
	}
	f := z.files[z.next]
	z.next++
	if f.Flags&0x1 != 0 {
		return Entry{}, fmt.Errorf("%w: zip entry %q is encrypted; s3io reads no encrypted entries (decrypt and repack the archive)", ErrUnsupported, f.Name)
	}
	switch f.Method {
	case zip.Store, zip.Deflate, zipBzip2, zipZstd, zipXz:
	case zipLZMA:
		return Entry{}, fmt.Errorf("%w: zip entry %q is compressed with LZMA (method 14); repack the archive with deflate, zstd or xz", ErrUnsupported, f.Name)
	default:
		return Entry{}, fmt.Errorf("%w: zip entry %q uses compression method %d; s3io reads store, deflate, bzip2, zstd and xz entries", ErrUnsupported, f.Name, f.Method)
	}
	rc, err := f.Open()
	if err != nil {
		return Entry{}, fmt.Errorf("zip entry %q: %w", f.Name, zipError(err, z.at.fetched))
	}
	z.cur = rc
	r, err := z.dec.open(f.Name, zipBody{rc, z.at})
	if err != nil {
		return Entry{}, err
	}
	return Entry{Name: f.Name, R: r}, nil
}

// zipBody classifies the errors of an entry's bytes.
type zipBody struct {
	r  io.Reader
	at *zipSource
}

func (b zipBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == zip.ErrChecksum {
		return n, corruptError("zip", fmt.Errorf("the entry's CRC-32 does not match its bytes"))
	}
	return n, zipError(err, b.at.fetched)
}

// zipSource is the io.ReaderAt archive/zip reads through: the central directory from the
// object's tail, fetched with ranged GETs, and then the entries from the object's stream,
// forward only (entries are read in the order of their offsets).
type zipSource struct {
	fwd       io.Reader // the object's bytes from offset 0
	fetched   *source   // fwd's fetch, for its errors
	pos       int64     // fwd's offset
	size      int64
	readRange RangeReader
	tailStart int64
	tail      []byte // the bytes [tailStart, size)
	streaming bool   // the directory is read: offsets below tailStart come from fwd
}

// fetchError is a failed ranged GET of the tail: it is reported as itself, not corruption.
type fetchError struct{ err error }

func (e *fetchError) Error() string { return e.err.Error() }
func (e *fetchError) Unwrap() error { return e.err }

func (z *zipSource) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("zip: negative offset")
	}
	if off >= z.size {
		return 0, io.EOF
	}
	if !z.streaming && off < z.tailStart {
		if err := z.extendTail(off); err != nil {
			return 0, err
		}
	}
	if off >= z.tailStart {
		n := copy(p, z.tail[off-z.tailStart:])
		if n < len(p) {
			return n, io.EOF
		}
		return n, nil
	}
	if off < z.pos {
		return 0, fmt.Errorf("zip: entries overlap: a read at byte %d after byte %d was read", off, z.pos)
	}
	if _, err := io.CopyN(io.Discard, z.fwd, off-z.pos); err != nil {
		return 0, err
	}
	z.pos = off
	n, err := io.ReadFull(z.fwd, p[:min(int64(len(p)), z.size-off)])
	z.pos += int64(n)
	if err == nil && n < len(p) {
		err = io.EOF
	}
	if err == io.ErrUnexpectedEOF {
		err = io.EOF
	}
	return n, err
}

// extendTail fetches the bytes from off (or more: at least zipTailBytes) up to the tail
// already held.
func (z *zipSource) extendTail(off int64) error {
	from := max(0, min(off, z.tailStart-zipTailBytes))
	if z.size-from > maxZipDirectoryBytes {
		return fmt.Errorf("%w: the zip's central directory is larger than %d MiB", ErrUnsupported, maxZipDirectoryBytes>>20)
	}
	b, err := z.readRange(from, z.tailStart)
	if err != nil {
		return &fetchError{err}
	}
	if int64(len(b)) != z.tailStart-from {
		return &fetchError{fmt.Errorf("s3io: a ranged GET of bytes [%d, %d) returned %d bytes", from, z.tailStart, len(b))}
	}
	z.tail = append(b, z.tail...)
	z.tailStart = from
	return nil
}

// headerOffsets returns the offset of each central directory entry's local header, in
// directory order: archive/zip keeps them to itself, and the stream must pass the entries
// in the order of their offsets. The directory is in the tail by now (zip.NewReader read
// it), after the end records that say where it starts.
func (z *zipSource) headerOffsets(count int) ([]int64, error) {
	tail := z.tail
	eocd := bytes.LastIndex(tail, []byte("PK\x05\x06"))
	if eocd < 0 || len(tail)-eocd < 22 {
		return nil, errors.New("zip: no end of central directory record")
	}
	dirSize := int64(binary.LittleEndian.Uint32(tail[eocd+12:]))
	dirOffset := int64(binary.LittleEndian.Uint32(tail[eocd+16:]))
	end := int64(eocd) // where the directory ends, in tail
	if dirOffset == 0xffffffff || dirSize == 0xffffffff {
		loc := eocd - 20 // the zip64 end of central directory locator
		if loc < 0 || !bytes.Equal(tail[loc:loc+4], []byte("PK\x06\x07")) {
			return nil, errors.New("zip: no zip64 end of central directory locator")
		}
		rec := bytes.LastIndex(tail[:loc], []byte("PK\x06\x06"))
		if rec < 0 || loc-rec < 56 {
			return nil, errors.New("zip: no zip64 end of central directory record")
		}
		dirSize = int64(binary.LittleEndian.Uint64(tail[rec+40:]))
		dirOffset = int64(binary.LittleEndian.Uint64(tail[rec+48:]))
		end = int64(rec)
	}
	start := end - dirSize
	if start < 0 {
		return nil, errors.New("zip: the central directory is not in the bytes read")
	}
	base := z.tailStart + start - dirOffset // bytes prepended to the archive (a self-extractor)
	dir := tail[start:end]
	offsets := make([]int64, 0, count)
	for len(offsets) < count {
		if len(dir) < 46 || !bytes.Equal(dir[:4], []byte("PK\x01\x02")) {
			return nil, errors.New("zip: a central directory entry is malformed")
		}
		nameLen := int(binary.LittleEndian.Uint16(dir[28:]))
		extraLen := int(binary.LittleEndian.Uint16(dir[30:]))
		commentLen := int(binary.LittleEndian.Uint16(dir[32:]))
		if len(dir) < 46+nameLen+extraLen+commentLen {
			return nil, errors.New("zip: a central directory entry is cut short")
		}
		off := int64(binary.LittleEndian.Uint32(dir[42:]))
		if off == 0xffffffff {
			off = zip64HeaderOffset(dir, dir[46+nameLen:46+nameLen+extraLen])
		}
		offsets = append(offsets, base+off)
		dir = dir[46+nameLen+extraLen+commentLen:]
	}
	return offsets, nil
}

// zip64HeaderOffset reads the local header offset from a zip64 extra field, whose 8-byte
// values are present only for the fields the fixed header marks 0xffffffff, in the order
// uncompressed size, compressed size, header offset.
func zip64HeaderOffset(hdr, extra []byte) int64 {
	for len(extra) >= 4 {
		id, size := binary.LittleEndian.Uint16(extra), int(binary.LittleEndian.Uint16(extra[2:]))
		if len(extra) < 4+size {
			break
		}
		if id == 0x0001 {
			field := extra[4 : 4+size]
			for _, at := range []int{24, 20} { // uncompressed, compressed size
				if binary.LittleEndian.Uint32(hdr[at:]) == 0xffffffff && len(field) >= 8 {
					field = field[8:]
				}
			}
			if len(field) >= 8 {
				return int64(binary.LittleEndian.Uint64(field))
			}
		}
		extra = extra[4+size:]
	}
	return -1
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
