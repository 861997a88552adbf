//go:build !unix

package fetch

func allocPart(size int) []byte { return make([]byte, size) }

func freePart([]byte) {}
