// Package xz decodes .xz files. It is a copy of github.com/therootcompany/xz v1.0.1
// (https://github.com/therootcompany/xz), the tagged, CC0-licensed copy of
// github.com/xi2/xz by Michael Cross, a translation to Go of XZ Embedded by Lasse
// Collin and Igor Pavlov (LICENSE and AUTHORS are the library's). Its decoder
// implements the .xz format: multiple streams and stream padding, every check
// type, index verification, and a bound on the LZMA2 dictionary.
//
// # What this copy changes, and why
//
// v1.0.1 is the library's only version, and it refused, as "compression options not
// supported", valid files that xz-utils 5.4 writes with the ARM64 BCJ filter
// (xz --arm64); s3io reported them as corrupt (issue 29). The library has no hook
// for filters, so s3io keeps this copy, changed so:
//
//   - The ARM64 (filter ID 0x0A, xz-utils 5.4) and RISC-V (0x0B, xz-utils 5.6) BCJ
//     decoders, ported from XZ Embedded's xz_dec_bcj.c (0BSD), with a start offset as
//     the other BCJ filters have (the offset a multiple of the filter's alignment, as
//     xz-utils requires). With them every filter xz-utils writes is decoded: Delta, and
//     BCJ for x86, PowerPC, IA-64, ARM, ARM-Thumb, SPARC, ARM64 and RISC-V.
//   - A Filter Flags' ID and size of properties are read as the variable-length
//     integers they are, not as one byte each, and a header this package refuses
//     (an unknown filter ID, a filter where the chain may not have it, unaligned BCJ
//     start offsets, reserved bits) fails with an *OptionsError, which wraps
//     ErrOptions and says which filter and what: s3io refuses such a file by the
//     filter's name instead of calling it corrupt. FilterName and IsBCJ name IDs.
//   - The BCJ and Delta decoders of one block are reused by the next block, where
//     v1.0.1 allocated new ones for each block of a stream.
//   - An LZMA chunk whose range coder does not start with a zero byte is corrupt, as
//     liblzma (xz) has it: XZ Embedded shifted that byte out unread, so a damaged
//     stream xz refuses decoded (s3io's mutation test found it).
//
// The LZMA2 decoder, the container code and the Reader's API are v1.0.1's; the
// common case, a file of LZMA2 alone, decodes as fast as with v1.0.1
// (BenchmarkDecodeRatio).
package xz
