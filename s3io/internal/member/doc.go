// Package member reads one member of a split descriptor: an object, or a part of one.
//
// s3io hands it what was planned (a Plan: the object, its stored span, the codec a part
// was cut by, where the restriction resumes inside it) and the bytes of the member's pinned
// fetch, and gets back a Read: a record cursor whose decoding and framing run on a
// goroutine of its own, and a Log of resume points for a split inside the member. Which
// kind of read a plan takes, what it fetches and where it starts and stops are decided
// here, one type per kind (one file each):
//
//   - rangeRead (range.go): stored bytes that are the records themselves, from a byte
//     offset: a part of an uncompressed object, or one resumed at a record's end;
//   - unitsRead (units.go): a part of a compressed object, from the unit (gzip member,
//     zstd frame, bzip2 stream) it starts at or a later one its read passed, decoded on one
//     goroutine or in chunks on several;
//   - inflateRead (inflate.go): a gzip object resumed at an inflate checkpoint;
//   - wholeRead (whole.go): any object from its first byte, whatever its compression or
//     archive format.
//
// read.go holds what every kind shares: the Reader (what a DoFn instance reads with) and
// the Read; log.go the resume points a split hands its residual.
package member
