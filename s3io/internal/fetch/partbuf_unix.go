//go:build unix

package fetch

import "syscall"

// allocPart maps a part buffer outside the Go heap. Part buffers are long-lived and large;
// on the heap they would count towards the garbage collector's goal and let the heap grow
// by as much again in short-lived record slabs before a collection. A mapping that fails
// falls back to the heap.
func allocPart(size int) []byte {
	b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return make([]byte, size)
	}
	return b
}

// freePart unmaps b, if allocPart mapped it.
func freePart(b []byte) {
	_ = syscall.Munmap(b) // EINVAL for a heap buffer: the collector frees it
}
