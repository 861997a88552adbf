package listing

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go/middleware"
	"github.com/aws/smithy-go/tracing"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// The SDK decodes a ListObjectsV2 page with encoding/xml through smithy's NodeDecoder into
// every field of ListObjectsV2Output, about 10 times the CPU of parsePage per 1,000-key page
// (docs/performance.md): on a 2-core worker that bounds how many pages can be listed in
// parallel, and it is most of the CPU of a ReadContinuously refresh. The fast deserializer replaces only the decoding of a
// successful response (request, signing, retries, errors and metadata stay the SDK's), and
// hands what parsePage does not decode to the SDK's deserializer, on the same response.

// maxBody bounds the body buffered (a 1,000-key page is a few hundred KiB); a larger one is
// streamed to the SDK's deserializer. maxPooledBody bounds the buffers kept for reuse, so
// one huge page does not pin its buffer for the life of the process.
const maxBody, maxPooledBody = 64 << 20, 8 << 20

// bodyPool recycles response buffers: a Page copies what it keeps.
var bodyPool sync.Pool

// pageDecoding is the option of a ListObjectsV2 call that decodes its page with parsePage;
// the Page is in the output's metadata (see pageOf). When the stack has no deserializer to
// replace, it sets *missing (if given) and leaves the SDK's in place.
func pageDecoding(missing *bool) func(*s3.Options) {
	return func(o *s3.Options) {
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			if stack.ID() != "ListObjectsV2" {
				return nil // the fast decoder only knows the ListObjectsV2 document
			}
			orig, ok := stack.Deserialize.Get("OperationDeserializer")
			if !ok {
				if missing != nil {
					*missing = true
				}
				return nil
			}
			if _, done := orig.(*fastDeserializer); done {
				return nil
			}
			// In the SDK's place, so that it runs inside the retry loop and around the
			// middlewares that collect response metadata.
			_, err := stack.Deserialize.Swap("OperationDeserializer", &fastDeserializer{sdk: orig})
			return err
		})
	}
}

// fastDeserializer decodes 2xx ListObjectsV2 responses itself and gives everything else
// (errors, transport failures, documents it does not decode) to the SDK's deserializer.
type fastDeserializer struct {
	sdk   middleware.DeserializeMiddleware
	limit int // the largest body decoded here; 0 means maxBody
}

// ID is the replaced middleware's, so that middlewares placed relative to it still find it.
func (*fastDeserializer) ID() string { return "OperationDeserializer" }

// HandleDeserialize decodes the response received by next. It never sends a request of its
// own: the SDK's deserializer, when needed, is given the response already received.
func (m *fastDeserializer) HandleDeserialize(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler,
) (out middleware.DeserializeOutput, metadata middleware.Metadata, err error) {
	out, metadata, err = next.HandleDeserialize(ctx, in)
	resp, ok := out.RawResponse.(*smithyhttp.Response)
	if err != nil || !ok || resp.Body == nil || resp.StatusCode < 200 || resp.StatusCode >= 300 {
		return m.sdkDecode(ctx, in, out, metadata, err)
	}
	_, span := tracing.StartSpan(ctx, "OperationDeserializer")
	defer span.End()

	body := resp.Body
	var buf []byte
	if p, _ := bodyPool.Get().(*[]byte); p != nil {
		buf = (*p)[:0]
	}
	limit := m.limit
	if limit <= 0 {
		limit = maxBody
	}
	buf, tooBig, readErr := readBody(body, resp.ContentLength, buf, limit)
	if tooBig || readErr != nil {
		// The SDK sees the same bytes, then the rest of the body or the same read error, so
		// that it fails or succeeds exactly as it would have.
		var rest io.Reader = body
		if readErr != nil {
			rest = failingReader{readErr}
		}
		resp.Body = replayBody{Reader: io.MultiReader(bytes.NewReader(buf), rest), Closer: body}
		return m.sdkDecode(ctx, in, out, metadata, nil)
	}
	page, perr := parsePage(buf)
	if perr != nil {
		// The buffer now belongs to the SDK's decoder (and whatever keeps the response).
		resp.Body = replayBody{Reader: bytes.NewReader(buf), Closer: body}
		return m.sdkDecode(ctx, in, out, metadata, nil)
	}
	if cap(buf) <= maxPooledBody {
		bodyPool.Put(&buf)
	}
	smithyhttp.CloseResponseBody(ctx, resp, false, nil)

	// The output carries what a paginator reads, and the output's one HTTP binding.
	output := &s3.ListObjectsV2Output{IsTruncated: aws.Bool(page.Truncated), EncodingType: types.EncodingType(page.EncodingType)}
	if page.NextContinuationToken != "" {
		output.NextContinuationToken = aws.String(page.NextContinuationToken)
	}
	if hv := resp.Header.Values("x-amz-request-charged"); len(hv) != 0 {
		output.RequestCharged = types.RequestCharged(strings.TrimSpace(hv[0]))
	}
	metadata.Set(pageKey{}, page)
	out.Result = output
	return out, metadata, nil
}

// sdkDecode runs the SDK's deserializer on a response already received: its next handler
// returns that response instead of sending the request again.
func (m *fastDeserializer) sdkDecode(ctx context.Context, in middleware.DeserializeInput,
	out middleware.DeserializeOutput, metadata middleware.Metadata, err error,
) (middleware.DeserializeOutput, middleware.Metadata, error) {
	return m.sdk.HandleDeserialize(ctx, in, received{out: out, metadata: metadata, err: err})
}

// received is a DeserializeHandler that returns what the transport already returned.
type received struct {
	out      middleware.DeserializeOutput
	metadata middleware.Metadata
	err      error
}

func (r received) HandleDeserialize(context.Context, middleware.DeserializeInput) (middleware.DeserializeOutput, middleware.Metadata, error) {
	return r.out, r.metadata, r.err
}

// replayBody serves the buffered bytes to the SDK's deserializer while closing the
// transport's body, which the connection's reuse depends on.
type replayBody struct {
	io.Reader
	io.Closer
}

// failingReader fails every read with the error the transport's body failed with.
type failingReader struct{ err error }

func (r failingReader) Read([]byte) (int, error) { return 0, r.err }

// readBody reads body into buf up to limit bytes: tooBig says there was more (one byte more
// has been read). sizeHint, the Content-Length or -1, sizes the buffer up front.
func readBody(body io.Reader, sizeHint int64, buf []byte, limit int) (_ []byte, tooBig bool, err error) {
	b := bytes.NewBuffer(buf[:0])
	if sizeHint >= 0 && sizeHint <= int64(limit) {
		b.Grow(int(sizeHint) + bytes.MinRead) // room for the read that returns EOF
	}
	_, err = b.ReadFrom(io.LimitReader(body, int64(limit)+1))
	return b.Bytes(), b.Len() > limit, err
}
