module github.com/spate-io/beam-s3/internal/codeccompare

go 1.26.0

require (
	github.com/andybalholm/brotli v1.3.0
	github.com/cosnicolaou/pbzip2 v1.0.5
	github.com/dsnet/compress v0.0.1
	github.com/golang/snappy v1.0.0
	github.com/klauspost/compress v1.20.4
	github.com/pierrec/lz4/v4 v4.1.33
	github.com/therootcompany/xz v1.0.1
	github.com/ulikunitz/xz v0.5.17
	github.com/xi2/xz v0.0.0-20171230120015-48954b6210f8
)
