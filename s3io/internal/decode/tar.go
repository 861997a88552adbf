package decode

import (
	"errors"
	"fmt"
	"io"

	"github.com/spate-io/beam-s3/s3io/internal/tarfmt"
)

// A tar is read as GNU tar extracts it (`tar -x`), entry type by entry type:
//
//   - regular files ('0', and '\x00' of v7 tars), contiguous files ('7', which POSIX reads
//     as regular) and sparse files (old GNU 'S' as GNU tar -S writes them, and PAX sparse
//     0.0, 0.1 and 1.0) are records: a sparse file's holes read as zeros, as `tar -x`
//     writes them;
//   - directories, hard and symbolic links, devices, FIFOs, GNU dump directories ('D', an
//     incremental dump's list of names) and volume labels ('V') hold no file content: no
//     records (a link's target is read once, at its own entry);
//   - GNU long names and links ('L', 'K') and PAX headers ('x'; 'g' for every entry after
//     it, as git archive writes one with the commit id) describe entries, not content;
//   - a multi-volume continuation ('M') and any other type are refused as ErrUnsupported,
//     naming the entry: their bytes are no file's content that s3io could frame;
//   - what tar readers read two ways is corrupt: a link, device or FIFO header that
//     declares data (GNU tar skips it, bsdtar and Python read a header there), a sparse
//     file whose stored fragments are not whole blocks (GNU tar reads each from a block of
//     its own, the others back to back).
//
// Numeric fields are read as GNU tar reads them, and PAX records that change no content
// (times, ids, a NUL in a path) leniently, as GNU tar, bsdtar and Python read them; sizes,
// headers' fields and checksums are strict (internal/tarfmt). After the end-of-archive marker the stream is
// read to its end: every codec's trailer is checked (a gzip CRC, an xz index), and any
// byte that is not zero padding is corruption. An archive that ends without the marker,
// after a whole entry, is read as the other tools read it: the object's size is pinned,
// so a cut object cannot pass for one (and a cut inside a codec fails the codec).

// tarEntries yields the records-bearing entries of a tar stream.
type tarEntries struct {
	tr     *tarfmt.Reader
	stream io.Reader // the tar's bytes, read to their end after the last entry
	src    *source
	dec    entryDecoder
}

func (d *Decompressors) openTar(mode Compression, stream io.Reader) Entries {
	return &tarEntries{tr: tarfmt.NewReader(stream), stream: stream, src: &d.src, dec: entryDecoder{mode: mode, kind: "tar", outer: d}}
}

func (t *tarEntries) Next() (Entry, error) {
	for {
		h, err := t.tr.Next()
		switch {
		case err == io.EOF:
			if err := t.readPadding(); err != nil {
				return Entry{}, err
			}
			return Entry{}, io.EOF
		case err != nil:
			return Entry{}, archiveError("tar", err, t.src)
		}
		switch h.Typeflag {
		case tarfmt.TypeReg, tarfmt.TypeCont, tarfmt.TypeGNUSparse:
		case tarfmt.TypeLink, tarfmt.TypeSymlink, tarfmt.TypeChar, tarfmt.TypeBlock, tarfmt.TypeDir, tarfmt.TypeFifo,
			typeGNUDumpDir, typeGNUVolume, tarfmt.TypeXGlobalHeader:
			continue
		case typeGNUMultiVolume:
			return Entry{}, fmt.Errorf("%w: tar entry %q continues a file from the previous volume of a multi-volume archive; s3io reads whole archives (join the volumes with tar -M, then repack)", ErrUnsupported, h.Name)
		default:
			return Entry{}, fmt.Errorf("%w: tar entry %q has type %q, which s3io does not read (it reads regular, contiguous and sparse files)", ErrUnsupported, h.Name, h.Typeflag)
		}
		r, err := t.dec.open(h.Name, tarBody{t.tr, t.src})
		if err != nil {
			return Entry{}, err
		}
		return Entry{Name: h.Name, R: r}, nil
	}
}

// The GNU entry types archive/tar does not name.
const (
	typeGNUDumpDir     = 'D' // an incremental dump's directory: the names it held
	typeGNUMultiVolume = 'M' // the rest of a file begun in the previous volume
	typeGNUVolume      = 'V' // the archive's volume label
)

// errTarTrailing is the corruption of a tar followed by more than zero padding: another
// archive appended, or damage. GNU tar and bsdtar stop at the marker and never look; s3io
// refuses instead of reading an object only in part.
var errTarTrailing = errors.New("bytes that are not zero padding follow the end-of-archive marker")

// readPadding reads the stream from the end-of-archive marker to its end, so that the
// codec's own end is checked, and fails on any byte that is not zero.
func (t *tarEntries) readPadding() error {
	var buf [32 << 10]byte
	for {
		n, err := t.stream.Read(buf[:])
		if !allZero(buf[:n]) {
			return corruptError("tar", errTarTrailing)
		}
		switch {
		case err == io.EOF:
			return nil
		case err != nil:
			return archiveError("tar", err, t.src)
		}
	}
}

// tarBody marks a body cut short as corrupt, unless the fetch failed.
type tarBody struct {
	tr  *tarfmt.Reader
	src *source
}

func (b tarBody) Read(p []byte) (int, error) {
	n, err := b.tr.Read(p)
	return n, archiveError("tar", err, b.src)
}

// DecodesToTar reports whether src, an object compressed with comp, decodes to a tar: it
// decodes its first MagicLen bytes. A head that does not decode counts as a tar too, so
// that a caller deciding whether to cut the object keeps it whole, and the whole read
// reports what is wrong with it.
func DecodesToTar(comp Compression, src io.Reader, maxWindow int64) bool {
	d := Decompressors{MaxWindow: maxWindow}
	defer d.Close()
	s, _, err := d.Open(comp, "", src)
	if err != nil {
		return true
	}
	head := make([]byte, MagicLen)
	n, err := io.ReadFull(s, head)
	if err != nil && err != io.ErrUnexpectedEOF {
		return true
	}
	return IsTar(head[:n])
}
