// Package tarfmt reads tar archives: it is the reading half of Go 1.26's archive/tar
// (reader.go, strconv.go, format.go and the types of common.go, under Go's BSD license in
// LICENSE), changed where GNU tar, bsdtar and Python's tarfile read an archive otherwise,
// so that s3io reads what `tar -x` extracts:
//
//   - an octal field is read as GNU tar reads it (strconv.go parseOctal): archive/tar
//     skipped every leading NUL and read a size of NULs ending in "0016" as 14 where GNU
//     tar, bsdtar and Python's tarfile read 0;
//   - PAX records that change no content are lenient (reader.go mergePAX): a malformed
//     id or time is ignored instead of refusing the archive, and a NUL ends a path, link
//     path or user or group name, as in GNU tar, bsdtar and Python (a header's own numeric
//     fields stay strict, as GNU tar and Python refuse a malformed one);
//   - a stream that ends inside an entry's padding is cut short, not the archive's end;
//   - a GNU sparse PAX entry of an unknown version is refused, not read as a regular file
//     holding its sparse map, and a 1.x entry whose minor record is lost is read as 1.0,
//     as GNU tar reads it;
//   - names are not checked with filepath.IsLocal: nothing is written to a file system;
//   - IsHeader tells a tar from other bytes by its header's checksum, which every tar
//     dialect has, not by the ustar magic that v7 tars lack.
//
// Sizes, sparse maps and checksums stay as strict as archive/tar's. Writing is not here.
package tarfmt
