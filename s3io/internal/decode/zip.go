package decode

import (
	"archive/zip"
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"io/fs"
	"slices"
	"strings"

	"github.com/klauspost/compress/flate"
)

// zipTailBytes is how much of a zip's end the first ranged GET fetches: the end of central
// directory record (22 bytes plus a comment of up to 64 KiB) and, for archives of up to
// about a thousand entries, the whole central directory.
const zipTailBytes = 128 << 10

// maxZipDirectoryBytes bounds the central directory held in memory (~100 bytes per entry:
// about a million entries).
const maxZipDirectoryBytes = 256 << 20

// zipEntries yields the regular files of a zip, in the order of their local headers, read
// from the object's stream; the central directory comes from a ranged GET of the tail.
type zipEntries struct {
	at      *zipSource
	files   []zipFile
	next    int
	dec     entryDecoder   // an entry's own codec, by its name (auto mode)
	methods *Decompressors // the zip compression methods beyond deflate
	cur     io.ReadCloser
}

// zipFile is a regular file of a zip and the offset of its local header.
type zipFile struct {
	*zip.File
	off int64
}

func (d *Decompressors) openZip(mode Compression, obj ObjectInfo, stream io.Reader) (Entries, error) {
	at := &zipSource{fwd: stream, fetched: &d.src, size: obj.Size, readRange: obj.ReadRange, tailStart: obj.Size}
	if err := at.readEnd(); err != nil {
		return nil, zipError(err, &d.src)
	}
	zr, err := zip.NewReader(at, obj.Size)
	if err != nil {
		return nil, zipError(err, &d.src)
	}
	offsets, err := at.headerOffsets(zr.File)
	if err != nil {
		return nil, zipError(err, &d.src)
	}
	at.streaming = true
	z := &zipEntries{at: at, dec: entryDecoder{mode: mode, kind: "zip", outer: d}, methods: d.inner(&d.methods)}
	z.registerMethods(zr)
	var files []zipFile
	for i, f := range zr.File {
		if t, ok := zipUnknownUnixType(f); ok {
			// archive/zip reads it as a regular file; unzip lists it as "?" and extracts no
			// file of it. Damage to the mode, most likely: refused, not guessed at.
			return nil, corruptError("zip", fmt.Errorf("entry %q has an unknown Unix file type (mode %#o)", f.Name, t))
		}
		// Not directories or links; an entry zip wrote from a pipe (stdin) is data. A
		// directory or link is skipped whatever its flags and method say: it yields no
		// records, so an encrypted directory entry (Info-ZIP never writes one, other tools
		// may flag it) hides nothing s3io would read, and refusing the archive for it would
		// refuse content that is all readable. An encrypted regular file is refused even
		// when empty: its bytes cannot be checked without the key.
		if m := f.Mode(); !m.IsDir() && m&(fs.ModeSymlink|fs.ModeDevice|fs.ModeSocket|fs.ModeIrregular) == 0 && !strings.HasSuffix(f.Name, "/") {
			files = append(files, zipFile{f, offsets[i]})
		}
	}
	// Archive order is the order of the local headers, which the stream passes once.
	slices.SortStableFunc(files, func(a, b zipFile) int { return cmp.Compare(a.off, b.off) })
	// Everything s3io refuses by an entry's directory record is decided here, for every
	// entry, before the first record: an unsupported object emits no records. What only an
	// entry's bytes tell (an archive inside by its magic, a codec's window or dictionary) is
	// decided when the stream reaches the entry.
	var refusal error
	refused := 0
	for _, f := range files {
		if err := zipRefusal(mode, f.File); err != nil {
			if refusal == nil {
				refusal = err
			}
			refused++
		}
	}
	z.files = files
	switch {
	case refused == 2:
		return nil, fmt.Errorf("%w (and 1 later entry s3io does not read either)", refusal)
	case refused > 2:
		return nil, fmt.Errorf("%w (and %d later entries s3io does not read either)", refusal, refused-1)
	case refusal != nil:
		return nil, refusal
	}
	return z, nil
}

// zipRefusal says why s3io does not read the regular file f, by its directory record alone:
// its encryption, its compression method and, in auto mode, a non-empty entry's name (a
// format refused by extension, or an archive, which Next would refuse whatever its bytes).
func zipRefusal(mode Compression, f *zip.File) error {
	if f.ReaderVersion&0xff > zipMaxVersion {
		// unzip exits 81 and Python's zipfile refuses: a feature of a later APPNOTE.
		return fmt.Errorf("%w: zip entry %q needs zip version %d.%d to extract; s3io reads up to %d.%d", ErrUnsupported, f.Name,
			f.ReaderVersion&0xff/10, f.ReaderVersion&0xff%10, zipMaxVersion/10, zipMaxVersion%10)
	}
	if f.Flags&0x1 != 0 { // traditional PKWARE encryption, and AES (method 99) too
		return fmt.Errorf("%w: zip entry %q is encrypted; s3io reads no encrypted entries (decrypt and repack the archive)", ErrUnsupported, f.Name)
	}
	switch f.Method {
	case zip.Store, zip.Deflate, zipBzip2, zipZstd, zipXz:
	case zipLZMA:
		return fmt.Errorf("%w: zip entry %q is compressed with LZMA (method 14); repack the archive with deflate, zstd or xz", ErrUnsupported, f.Name)
	default:
		return fmt.Errorf("%w: zip entry %q uses compression method %d; s3io reads store, deflate, bzip2, zstd and xz entries", ErrUnsupported, f.Name, f.Method)
	}
	// An empty entry is an empty stream whatever its name says (Decompressors.Open).
	if mode != Auto || f.UncompressedSize64 == 0 {
		return nil
	}
	switch comp := Detect(Auto, f.Name, nil); {
	case IsUnsupported(comp):
		return fmt.Errorf("zip entry %q: %w", f.Name, UnsupportedError(comp))
	case comp == Tar, comp == Zip:
		return fmt.Errorf("%w: zip entry %q is itself a %s archive, which s3io does not read inside an archive; unpack the outer archive", ErrUnsupported, f.Name, comp)
	}
	return nil
}

// zipLocalMismatch says where an entry's local header hdr (its 30 fixed bytes, name and
// extra field) disagrees with the entry's central directory record f. archive/zip reads the
// directory's fields only and skips the local header's; Info-ZIP unzip extracts an entry by
// its local header's method, flags, CRC-32 and sizes (the directory's CRC-32 and sizes when
// the local flags announce a data descriptor, bit 3) and warns, exit 1, of a local name or
// UTF-8 flag (bit 11) that differs; Python's zipfile refuses a name that differs ("File name
// in directory ... and header ... differ"). An entry whose two headers disagree is damaged,
// and reading it by the directory alone would read what unzip refuses, or other bytes than
// it extracts: it is corrupt. A zip64 local header gives the sizes it marks 0xffffffff in
// its zip64 extra field, uncompressed then compressed, as unzip reads them (getZip64Data).
func zipLocalMismatch(f *zip.File, hdr []byte) error {
	if !bytes.HasPrefix(hdr, []byte("PK\x03\x04")) {
		return fmt.Errorf("no local header at the offset the central directory gives")
	}
	le := binary.LittleEndian
	nameLen := int(le.Uint16(hdr[26:]))
	if name := hdr[30 : 30+nameLen]; string(name) != f.Name {
		return fmt.Errorf("its local header names it %q", name)
	}
	if m := le.Uint16(hdr[8:]); m != f.Method {
		return fmt.Errorf("its local header says method %d, the central directory %d", m, f.Method)
	}
	flags := le.Uint16(hdr[6:])
	for _, b := range []struct {
		mask uint16
		what string
	}{{0x1, "bit 0 (encrypted)"}, {0x800, "bit 11 (a UTF-8 name)"}} {
		if flags&b.mask != f.Flags&b.mask {
			return fmt.Errorf("its local header's flags (%#04x) and the central directory's (%#04x) differ in %s", flags, f.Flags, b.what)
		}
	}
	if flags&0x8 != 0 {
		return nil // a data descriptor follows: the CRC-32 and sizes are the directory's
	}
	if crc := le.Uint32(hdr[14:]); crc != f.CRC32 {
		return fmt.Errorf("its local header says CRC-32 %08x, the central directory %08x", crc, f.CRC32)
	}
	csize, usize := uint64(le.Uint32(hdr[18:])), uint64(le.Uint32(hdr[22:]))
	for extra := hdr[30+nameLen:]; len(extra) >= 4; {
		id, size := le.Uint16(extra), int(le.Uint16(extra[2:]))
		if len(extra) < 4+size {
			break
		}
		if id == 0x0001 {
			field := extra[4 : 4+size]
			for _, v := range []*uint64{&usize, &csize} {
				if *v == 0xffffffff {
					if len(field) < 8 {
						return fmt.Errorf("its local header's zip64 extra field is cut short")
					}
					*v, field = le.Uint64(field), field[8:]
				}
			}
			break
		}
		extra = extra[4+size:]
	}
	if csize != f.CompressedSize64 {
		return fmt.Errorf("its local header says %d compressed bytes, the central directory %d", csize, f.CompressedSize64)
	}
	if usize != f.UncompressedSize64 {
		return fmt.Errorf("its local header says %d uncompressed bytes, the central directory %d", usize, f.UncompressedSize64)
	}
	return nil
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
	f := z.files[z.next] // openZip refused the archive if it refuses f
	z.next++
	rc, err := z.open(f)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF // the directory puts the local header past the object's end
	}
	if err != nil {
		return Entry{}, fmt.Errorf("zip entry %q: %w", f.Name, zipError(err, z.at.fetched))
	}
	z.cur = rc
	body := &zipBody{r: rc, at: z.at}
	if f.CRC32 == 0 {
		body.crc = crc32.NewIEEE()
	}
	r, err := z.dec.open(f.Name, body)
	if err != nil {
		return Entry{}, err
	}
	return Entry{Name: f.Name, R: r}, nil
}

// open checks f's local header against its central directory record, then opens f. The
// local header is read here, from the stream, and held by z.at: f.Open reads its first 30
// bytes again, served from memory, and skips the rest to the entry's bytes.
func (z *zipEntries) open(f zipFile) (io.ReadCloser, error) {
	hdr, err := z.at.localHeader(f.off)
	if err != nil {
		return nil, err
	}
	if err := zipLocalMismatch(f.File, hdr); err != nil {
		return nil, err
	}
	return f.Open()
}

// zipBody classifies the errors of an entry's bytes. archive/zip checks an entry's CRC-32 at
// its end unless the directory gives it as 0 (and no data descriptor follows), taking 0 for
// "not set"; Info-ZIP unzip, Python's zipfile and bsdtar all check it, and so does zipBody
// (crc): otherwise zeroing the field would leave the entry's bytes unchecked.
type zipBody struct {
	r   io.Reader
	at  *zipSource
	crc hash.Hash32 // for an entry whose CRC-32 is 0: the bytes must hash to 0 too
}

func (b *zipBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if b.crc != nil {
		b.crc.Write(p[:n])
		if err == io.EOF && b.crc.Sum32() != 0 {
			err = zip.ErrChecksum
		}
	}
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
	// The local header localHeader read last, at hdrOff: until the stream passes it, a read
	// of its bytes again (File.Open's) is served from here.
	hdr    []byte
	hdrOff int64
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
		if h := off - z.hdrOff; h >= 0 && h < int64(len(z.hdr)) && z.pos <= z.hdrOff+int64(len(z.hdr)) {
			n := copy(p, z.hdr[h:])
			if n == len(p) {
				return n, nil
			}
			m, err := z.ReadAt(p[n:], off+int64(n))
			return n + m, err
		}
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

// localHeader reads the local header at off: its 30 fixed bytes, then its name and extra
// field. It holds them until the stream passes them, so that File.Open, which reads the
// first 30 bytes again to find the entry's bytes, reads them from memory: the object is
// read once, and an entry costs one header read, not one per record.
func (z *zipSource) localHeader(off int64) ([]byte, error) {
	h := z.hdr[:0]
	z.hdr = nil // h is reused: no read below is served from it
	h = slices.Grow(h, 30)[:30]
	if _, err := z.ReadAt(h, off); err != nil {
		return nil, err
	}
	if bytes.HasPrefix(h, []byte("PK\x03\x04")) {
		n := 30 + int(binary.LittleEndian.Uint16(h[26:])) + int(binary.LittleEndian.Uint16(h[28:]))
		if n > 30 {
			h = slices.Grow(h, n-30)[:n]
			if _, err := z.ReadAt(h[30:], off+30); err != nil {
				return nil, err
			}
		}
	}
	z.hdr, z.hdrOff = h, off
	return h, nil
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

// zipEndSearch is how far from the object's end archive/zip looks for the end of central
// directory record (readDirectoryEnd): its 22 bytes and a comment of up to 64 KiB.
const zipEndSearch = 65 << 10

// zipEnd returns where in tail, the object's last bytes, the end of central directory
// record archive/zip reads is: the last signature with a whole record after it, within
// zipEndSearch of the end; -1 if there is none. headerOffsets and readEnd find it with
// zipEnd so that they agree with archive/zip on which record it is (a comment may hold the
// signature too: "PK\x05\x06" in its last 21 bytes is no record).
func zipEnd(tail []byte) int {
	if len(tail) < 22 {
		return -1
	}
	lo := max(0, len(tail)-zipEndSearch)
	i := bytes.LastIndex(tail[lo:len(tail)-22+4], []byte("PK\x05\x06"))
	if i < 0 {
		return -1
	}
	return lo + i
}

// readEnd fetches the object's tail and, where the end of central directory record declares
// a comment longer than the bytes after it, presents archive/zip with the comment the object
// holds: the declared length is cut to the bytes present, in the tail held here.
//
// archive/zip refuses such an object ("not a valid zip file": it takes the overrunning
// record for no record); Info-ZIP unzip (-p and extracting exit 0; -t and -l say "zipfile
// comment truncated" and exit 1, a warning), Python's zipfile and bsdtar read it (7-Zip
// extracts every entry, then exits 2: "Unexpected end of archive"), and the comment
// changes no entry's content. The opposite case, bytes after the declared comment,
// archive/zip reads already, as all three do; bytes that hold the record's signature in
// their last 21 bytes unzip and bsdtar read too (Python's zipfile takes them for a cut
// record), and zipEnd passes over them as archive/zip does. A record farther than
// zipEndSearch from the end (over 64 KiB of trailing bytes) is not found: archive/zip and
// Python's zipfile refuse the object, unzip and bsdtar read it, s3io refuses it as corrupt.
// So the metadata after the entries is read as leniently as the reference tools read it,
// while every entry's content is still checked (its CRC-32, its size, its codec's end).
func (z *zipSource) readEnd() error {
	if z.size == 0 {
		return nil
	}
	if err := z.extendTail(z.size); err != nil {
		return err
	}
	i := zipEnd(z.tail)
	if i < 0 {
		return nil // archive/zip reports the missing record
	}
	if have := len(z.tail) - i - 22; int(binary.LittleEndian.Uint16(z.tail[i+20:])) > have {
		binary.LittleEndian.PutUint16(z.tail[i+20:], uint16(have)) // less than declared: it fits
	}
	return z.refuseSplit(z.tailStart + int64(i))
}

// refuseSplit refuses a zip whose end records, the one at eocd and the zip64 ones archive/zip
// reads, say that it spans disks: a part of a split archive (zip -s; the last part, x.zip,
// holds the end record) or of a spanned one, or damage. Info-ZIP unzip refuses the part
// whose central directory starts on another disk ("Zipfile is disk N of a multi-disk
// archive", exit 11) and warns, exit 1, of the others; Python's zipfile refuses a zip64
// locator of another disk ("zipfiles that span multiple disks are not supported").
// archive/zip checks none of these fields: it would read another disk's offsets in this
// one. A field of the end record at its maximum (0xffff) defers to the zip64 record, as
// unzip reads it. It is all decided before the first record.
func (z *zipSource) refuseSplit(eocd int64) error {
	le := binary.LittleEndian
	rec := z.tail[eocd-z.tailStart:]
	fields := []uint64{uint64(le.Uint16(rec[4:])), uint64(le.Uint16(rec[6:])), uint64(le.Uint16(rec[8:])), uint64(le.Uint16(rec[10:]))}
	var z64 []uint64 // the zip64 record's: this disk, the directory's disk, its entries here, in all
	// As archive/zip does (readDirectoryEnd, findDirectory64End): these values send it to
	// the zip64 locator before the record, which it reads if it says disk 0 of 1.
	if loc := eocd - 20; (fields[3] == 0xffff || le.Uint32(rec[12:]) == 0xffff || le.Uint32(rec[16:]) == 0xffffffff) &&
		loc >= z.tailStart && bytes.HasPrefix(z.tail[loc-z.tailStart:], []byte("PK\x06\x07")) {
		l := z.tail[loc-z.tailStart:]
		if disk, disks := le.Uint32(l[4:]), le.Uint32(l[16:]); disk != 0 || disks > 1 {
			return zipSplitError(fmt.Sprintf("its zip64 locator says the zip64 end record is on disk %d of %d", disk, disks))
		} else if disks == 1 {
			var r [56]byte
			if _, err := z.ReadAt(r[:], int64(le.Uint64(l[8:]))); err != nil {
				var fe *fetchError
				if errors.As(err, &fe) || errors.Is(err, ErrUnsupported) {
					return err
				}
				return nil // archive/zip reports it
			}
			if bytes.HasPrefix(r[:], []byte("PK\x06\x06")) {
				z64 = []uint64{uint64(le.Uint32(r[16:])), uint64(le.Uint32(r[20:])), le.Uint64(r[24:]), le.Uint64(r[32:])}
				for i, v := range fields {
					if v == 0xffff {
						fields[i] = z64[i]
					}
				}
			}
		}
	}
	for _, r := range []struct {
		name string
		f    []uint64
	}{{"end record", fields}, {"zip64 end record", z64}} {
		switch f := r.f; {
		case f == nil:
		case f[0] != 0 || f[1] != 0:
			return zipSplitError(fmt.Sprintf("its %s says this is disk %d and the central directory starts on disk %d", r.name, f[0], f[1]))
		case f[2] != f[3]:
			return zipSplitError(fmt.Sprintf("its %s counts %d central directory entries on this disk of %d in all", r.name, f[2], f[3]))
		}
	}
	return nil
}

func zipSplitError(says string) error {
	return fmt.Errorf("%w: a zip split across disks (zip -s) or spanned: %s; s3io reads a whole zip: join the parts with zip -s 0 (zip -s 0 x.zip --out whole.zip)", ErrUnsupported, says)
}

// headerOffsets returns the offset of each central directory entry's local header, in
// directory order: archive/zip keeps them to itself, and the stream must pass the entries
// in the order of their offsets. The directory is in the tail by now (zip.NewReader read
// it), after the end records that say where it starts; they are read as archive/zip reads
// them (readDirectoryEnd), and each entry's name must be the one archive/zip read.
func (z *zipSource) headerOffsets(files []*zip.File) ([]int64, error) {
	tail := z.tail
	eocd := zipEnd(tail)
	if eocd < 0 {
		return nil, errors.New("zip: no end of central directory record")
	}
	records := binary.LittleEndian.Uint16(tail[eocd+10:])
	dirSize := int64(binary.LittleEndian.Uint32(tail[eocd+12:]))
	dirOffset := int64(binary.LittleEndian.Uint32(tail[eocd+16:]))
	end := int64(eocd) // where the directory ends, in tail
	// As archive/zip does: any of these values sends it to the zip64 locator before the
	// record, and a locator that is not there leaves the values as they are (more than 65535
	// entries in a directory whose size and offset fit set only the count to 0xffff).
	if records == 0xffff || dirSize == 0xffff || dirOffset == 0xffffffff {
		if loc := eocd - 20; loc >= 0 && bytes.Equal(tail[loc:loc+4], []byte("PK\x06\x07")) &&
			binary.LittleEndian.Uint32(tail[loc+4:]) == 0 && binary.LittleEndian.Uint32(tail[loc+16:]) == 1 {
			rec := int64(binary.LittleEndian.Uint64(tail[loc+8:])) - z.tailStart // the zip64 record
			if rec < 0 || rec+56 > int64(len(tail)) || !bytes.Equal(tail[rec:rec+4], []byte("PK\x06\x06")) {
				return nil, errors.New("zip: no zip64 end of central directory record")
			}
			dirSize = int64(binary.LittleEndian.Uint64(tail[rec+40:]))
			dirOffset = int64(binary.LittleEndian.Uint64(tail[rec+48:]))
			end = rec
		}
	}
	start := end - dirSize
	if start < 0 {
		return nil, errors.New("zip: the central directory is not in the bytes read")
	}
	base := z.tailStart + start - dirOffset // bytes prepended to the archive (a self-extractor)
	dir := tail[start:end]
	offsets := make([]int64, 0, len(files))
	for _, f := range files {
		if len(dir) < 46 || !bytes.Equal(dir[:4], []byte("PK\x01\x02")) {
			return nil, errors.New("zip: a central directory entry is malformed")
		}
		nameLen := int(binary.LittleEndian.Uint16(dir[28:]))
		extraLen := int(binary.LittleEndian.Uint16(dir[30:]))
		commentLen := int(binary.LittleEndian.Uint16(dir[32:]))
		if len(dir) < 46+nameLen+extraLen+commentLen {
			return nil, errors.New("zip: a central directory entry is cut short")
		}
		if string(dir[46:46+nameLen]) != f.Name {
			return nil, fmt.Errorf("zip: the central directory names %q where archive/zip read %q", dir[46:46+nameLen], f.Name)
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

// zipMaxVersion is the newest "version needed to extract" s3io reads: APPNOTE 6.3, which
// covers every method it reads (zstd 93 and xz 95 included), as Python's zipfile does.
const zipMaxVersion = 63

// zipUnknownUnixType reports an entry made on Unix whose mode names a file type that is
// none of regular, directory, link, device, FIFO or socket, and that type.
func zipUnknownUnixType(f *zip.File) (uint32, bool) {
	if f.CreatorVersion>>8 != 3 { // 3: Unix
		return 0, false
	}
	switch t := f.ExternalAttrs >> 16 & 0xf000; t {
	case 0, 0x8000, 0x4000, 0xa000, 0x2000, 0x6000, 0x1000, 0xc000:
		return 0, false
	default:
		return t, true
	}
}
