package faultproxy

// ListObjectsV2 requests: the proxy logs each (what it asked for, when, how many were in
// flight at once), may hold it for a while (ListDelay: S3 answers a LIST in tens to hundreds
// of milliseconds, versitygw on loopback in a few, so concurrency would otherwise depend on
// timing), and may rewrite the body of its answer (RewriteList) where versitygw cannot give
// what S3 gives:
//
//   - SetStorageClass: S3 lists an object in the class it was stored in or transitioned to,
//     such as GLACIER or DEEP_ARCHIVE. versitygw v1.8.0 accepts x-amz-storage-class on PUT
//     but stores and lists every object as STANDARD.
//   - SetRestoreStatus: S3 lists <RestoreStatus> for a restored (or restoring) archived
//     object when the request asks with "x-amz-optional-object-attributes: RestoreStatus".
//     versitygw ignores the header and cannot restore (RestoreObject answers 501).
//   - URLEncodeKeys: S3 percent-encodes keys, prefixes, StartAfter and Delimiter and says
//     <EncodingType>url</EncodingType> when the request asks for encoding-type=url, which
//     is the only way a listing can carry a key with a character XML 1.0 cannot (U+0001,
//     U+001F...). versitygw ignores encoding-type, answers an empty <EncodingType>, and
//     writes its XML with encoding/xml, which replaces such characters with U+FFFD: the
//     listed key is not the stored one. StoredKeys maps the listed key back to the stored
//     one, which the test knows (it stored it).
//
// The answer to GETs of archived objects is an Fault: InvalidObjectState.
//
// A rewrite parses the body into a tree that keeps every byte it does not edit (start tags
// with their attributes, text as escaped, declarations and comments), edits elements of the
// tree, and writes it back: an unedited document comes back byte for byte (listing_test.go).

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// InvalidObjectState is S3's answer to a GET of an object in an archive storage class
// (GLACIER, DEEP_ARCHIVE) that is not restored, or in an Intelligent-Tiering archive tier
// (which listings do not show): 403 with code InvalidObjectState. versitygw has no archive
// tier and serves every object.
var InvalidObjectState = Fault{Status: http.StatusForbidden, Code: "InvalidObjectState"}

// ListRequest is one ListObjectsV2 request the proxy saw.
type ListRequest struct {
	Bucket string
	// The query parameters, as the client sent them ("" when absent).
	Prefix, StartAfter, Delimiter, MaxKeys, EncodingType, ContinuationToken string
	// OptionalAttributes is the x-amz-optional-object-attributes header ("RestoreStatus"
	// when the client asked for each object's restore status).
	OptionalAttributes string
	// Status is the HTTP status the client got (0 while it is being answered); Rewritten
	// says RewriteList changed the body.
	Status    int
	Rewritten bool
	// Start is when the proxy received the request, End when it finished answering it.
	Start, End time.Time
}

// Rewrite transforms the body of a successful ListObjectsV2 response to req. An error fails
// the request with a 400 the client does not retry, naming the error.
type Rewrite func(req ListRequest, body []byte) ([]byte, error)

// listLog is the proxy's record of ListObjectsV2 requests.
type listLog struct {
	log      []*ListRequest
	inFlight int
	maxIn    int
}

// Lists returns every ListObjectsV2 request logged since the proxy started or ResetLists,
// in the order they arrived.
func (p *Proxy) Lists() []ListRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]ListRequest, len(p.lists.log))
	for i, l := range p.lists.log {
		out[i] = *l
	}
	return out
}

// MaxListsInFlight returns the most ListObjectsV2 requests that were being served at once
// (from their arrival until their answer started to be written) since the proxy started or
// ResetLists.
func (p *Proxy) MaxListsInFlight() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lists.maxIn
}

// ResetLists forgets the logged ListObjectsV2 requests and their concurrency, so that a test
// running several pipelines through one proxy observes each on its own.
func (p *Proxy) ResetLists() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lists.log, p.lists.maxIn = nil, p.lists.inFlight
}

// isListObjectsV2 reports whether r is a path-style ListObjectsV2 request: GET /bucket (or
// /bucket/) with list-type=2.
func isListObjectsV2(r *http.Request) bool {
	if r.Method != http.MethodGet || r.URL.Query().Get("list-type") != "2" {
		return false
	}
	bucket := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/"), "/")
	return bucket != "" && !strings.Contains(bucket, "/")
}

func (p *Proxy) serveList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	entry := &ListRequest{
		Bucket:             strings.Trim(r.URL.Path, "/"),
		Prefix:             q.Get("prefix"),
		StartAfter:         q.Get("start-after"),
		Delimiter:          q.Get("delimiter"),
		MaxKeys:            q.Get("max-keys"),
		EncodingType:       q.Get("encoding-type"),
		ContinuationToken:  q.Get("continuation-token"),
		OptionalAttributes: r.Header.Get("X-Amz-Optional-Object-Attributes"),
		Start:              time.Now(),
	}
	p.mu.Lock()
	p.lists.log = append(p.lists.log, entry)
	p.lists.inFlight++
	p.lists.maxIn = max(p.lists.maxIn, p.lists.inFlight)
	rewrite, delay, before, n := p.RewriteList, p.ListDelay, p.BeforeList, len(p.lists.log)
	req := *entry
	p.mu.Unlock()
	if before != nil {
		before(n)
	}
	// A LIST is in flight until its answer starts to be written: a client has the answer
	// only after that, and may send its next LIST before this handler returns, so counting
	// to the handler's end would count a sequential client's LISTs two at a time.
	answering := sync.OnceFunc(func() {
		p.mu.Lock()
		p.lists.inFlight--
		p.mu.Unlock()
	})
	status, rewritten := 0, false
	defer func() {
		answering()
		p.mu.Lock()
		entry.Status, entry.Rewritten, entry.End = status, rewritten, time.Now()
		p.mu.Unlock()
	}()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	resp, err := p.forward(r, false)
	if err != nil {
		status = http.StatusBadGateway
		answering()
		http.Error(w, err.Error(), status)
		return
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		status = http.StatusBadGateway
		answering()
		http.Error(w, err.Error(), status)
		return
	}
	if rewrite != nil && resp.StatusCode == http.StatusOK {
		edited, err := rewriteBody(rewrite, req, resp.Header, body)
		if err != nil {
			// A 4xx, so that the client fails at once with the reason instead of retrying.
			status = http.StatusBadRequest
			answering()
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(status)
			var msg bytes.Buffer
			xml.EscapeText(&msg, []byte(err.Error()))
			fmt.Fprintf(w, "<Error><Code>FaultProxyRewriteFailed</Code><Message>%s</Message></Error>", msg.String())
			return
		}
		rewritten = !bytes.Equal(edited, body)
		body = edited
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	status = resp.StatusCode
	answering()
	w.WriteHeader(status)
	w.Write(body)
}

// rewriteBody applies rewrite to an identity-encoded body; a compressed one cannot be
// edited as text.
func rewriteBody(rewrite Rewrite, req ListRequest, h http.Header, body []byte) ([]byte, error) {
	if enc := h.Get("Content-Encoding"); enc != "" && enc != "identity" {
		return nil, fmt.Errorf("faultproxy: cannot rewrite a listing sent with Content-Encoding %q", enc)
	}
	return rewrite(req, body)
}

// Chain applies rewrites one after another.
func Chain(rewrites ...Rewrite) Rewrite {
	return func(req ListRequest, body []byte) ([]byte, error) {
		var err error
		for _, rw := range rewrites {
			if body, err = rw(req, body); err != nil {
				return nil, err
			}
		}
		return body, nil
	}
}

// SetStorageClass lists each object whose key is in classes in that storage class, such as
// "GLACIER", replacing its <StorageClass> (or adding one). Other objects are untouched.
func SetStorageClass(classes map[string]string) Rewrite {
	return editObjects(func(_ ListRequest, key string, obj *xmlNode) {
		if class, ok := classes[key]; ok {
			obj.set("StorageClass", class)
		}
	})
}

// RestoreStatus is an archived object's restore status, as S3 lists it.
type RestoreStatus struct {
	// InProgress: a restore was requested and the restored copy is not readable yet.
	InProgress bool
	// ExpiryDate is when the restored copy expires; S3 sends it only once the restore is
	// complete (InProgress false).
	ExpiryDate time.Time
}

// SetRestoreStatus adds <RestoreStatus> to each object whose key is in status, when the
// request asked for it with "x-amz-optional-object-attributes: RestoreStatus", as S3 does
// (S3 lists it only then).
func SetRestoreStatus(status map[string]RestoreStatus) Rewrite {
	return editObjects(func(req ListRequest, key string, obj *xmlNode) {
		st, ok := status[key]
		if !ok || !asksRestoreStatus(req) {
			return
		}
		rs := obj.element("RestoreStatus")
		rs.children = nil
		rs.set("IsRestoreInProgress", fmt.Sprint(st.InProgress))
		if !st.InProgress {
			rs.set("RestoreExpiryDate", st.ExpiryDate.UTC().Format("2006-01-02T15:04:05.000Z"))
		}
	})
}

func asksRestoreStatus(req ListRequest) bool {
	for _, a := range strings.Split(req.OptionalAttributes, ",") {
		if strings.TrimSpace(a) == "RestoreStatus" {
			return true
		}
	}
	return false
}

// URLEncodeKeys answers a request that asked for encoding-type=url as S3 does: Key, Prefix
// (the request's and each CommonPrefixes'), StartAfter and Delimiter percent-encoded (see
// S3URLEncode) and <EncodingType>url</EncodingType>. stored, when not nil, maps each listed
// key and common prefix to the one that was stored (see StoredKeys) before it is encoded.
// A request that did not ask, and a response the server already encoded, pass untouched.
func URLEncodeKeys(stored func(listed string) string) Rewrite {
	if stored == nil {
		stored = func(s string) string { return s }
	}
	return func(req ListRequest, body []byte) ([]byte, error) {
		if req.EncodingType != "url" {
			return body, nil
		}
		return editListing(body, func(res *xmlNode) error {
			if enc := res.child("EncodingType"); enc != nil {
				if v, err := enc.text(); err != nil || v == "url" {
					return err // already encoded by the server
				}
			}
			encode := func(n *xmlNode, restore bool) error {
				v, err := n.text()
				if err != nil {
					return err
				}
				if restore {
					v = stored(v)
				}
				n.setText(S3URLEncode(v))
				return nil
			}
			for _, c := range res.children {
				var err error
				switch c.name {
				case "Prefix", "StartAfter", "Delimiter":
					err = encode(c, false)
				case "Contents":
					if k := c.child("Key"); k != nil {
						err = encode(k, true)
					}
				case "CommonPrefixes":
					if pr := c.child("Prefix"); pr != nil {
						err = encode(pr, true)
					}
				}
				if err != nil {
					return err
				}
			}
			res.set("EncodingType", "url")
			return nil
		})
	}
}

// S3URLEncode encodes s as S3 encodes names in an encoding-type=url listing, the way MinIO
// reproduces it: query escaping (a space becomes "+", every byte but letters, digits and
// "-_.*/" becomes %XX), with "/" and "*" kept. url.QueryUnescape reverses it.
func S3URLEncode(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9', strings.IndexByte("-_.*/", c) >= 0:
			b.WriteByte(c)
		case c == ' ':
			b.WriteByte('+')
		default:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.String()
}

// XMLListed returns key as a server that writes its XML with encoding/xml (versitygw) lists
// it: every character XML 1.0 cannot carry (most C0 controls, invalid UTF-8) becomes
// U+FFFD.
func XMLListed(key string) string {
	var esc bytes.Buffer
	xml.EscapeText(&esc, []byte(key))
	var v string
	if err := xml.Unmarshal([]byte("<k>"+esc.String()+"</k>"), &v); err != nil {
		panic(err) // EscapeText writes only what encoding/xml reads
	}
	return v
}

// StoredKeys returns a mapping for URLEncodeKeys from each key as versitygw lists it
// (XMLListed) back to the key that was stored, for the keys given and for their folders
// (each prefix ending in "/", as a delimiter listing's CommonPrefixes give them); other
// names map to themselves. It panics if two of them are listed alike, since then the
// listing cannot tell them apart.
func StoredKeys(keys ...string) func(listed string) string {
	m := map[string]string{}
	add := func(k string) {
		l := XMLListed(k)
		if prev, ok := m[l]; ok && prev != k {
			panic(fmt.Sprintf("faultproxy: %q and %q are both listed as %q", prev, k, l))
		}
		m[l] = k
	}
	for _, k := range keys {
		add(k)
		for i := range len(k) {
			if k[i] == '/' {
				add(k[:i+1])
			}
		}
	}
	return func(listed string) string {
		if k, ok := m[listed]; ok {
			return k
		}
		return listed
	}
}

// editObjects returns a Rewrite that calls edit with each listed object (a <Contents>
// element) and its key, decoded if the listing is URL-encoded, so that rewrites compose in
// any order with URLEncodeKeys.
func editObjects(edit func(req ListRequest, key string, obj *xmlNode)) Rewrite {
	return func(req ListRequest, body []byte) ([]byte, error) {
		return editListing(body, func(res *xmlNode) error {
			encoded, err := urlEncoded(res)
			if err != nil {
				return err
			}
			for _, c := range res.elements("Contents") {
				key, err := listedKey(c, encoded)
				if err != nil {
					return err
				}
				edit(req, key, c)
			}
			return nil
		})
	}
}

// urlEncoded reports whether a listing's keys are URL-encoded (<EncodingType>url).
func urlEncoded(res *xmlNode) (bool, error) {
	enc := res.child("EncodingType")
	if enc == nil {
		return false, nil
	}
	v, err := enc.text()
	return v == "url", err
}

// listedKey returns the key of a listed object (a <Contents> element), decoded if the
// listing is URL-encoded.
func listedKey(obj *xmlNode, encoded bool) (string, error) {
	k := obj.child("Key")
	if k == nil {
		return "", fmt.Errorf("faultproxy: a listed object has no <Key>")
	}
	key, err := k.text()
	if err != nil || !encoded {
		return key, err
	}
	decoded, err := url.QueryUnescape(key)
	if err != nil {
		return "", fmt.Errorf("faultproxy: listed key %q is not URL-encoded: %w", key, err)
	}
	return decoded, nil
}

// editListing parses a ListObjectsV2 body, edits its <ListBucketResult> and writes it back.
func editListing(body []byte, edit func(res *xmlNode) error) ([]byte, error) {
	doc, err := parseXML(body)
	if err != nil {
		return nil, err
	}
	res := doc.child("ListBucketResult")
	if res == nil {
		return nil, fmt.Errorf("faultproxy: the listing has no <ListBucketResult>")
	}
	if err := edit(res); err != nil {
		return nil, err
	}
	return doc.bytes(), nil
}

// xmlNode is an element of a parsed document, or a run of raw bytes: text as escaped in the
// document, a declaration or a comment. The document itself is an element without a name.
type xmlNode struct {
	name     string // the element's name; "" for raw bytes and for the document
	raw      string // raw bytes: themselves; an element: its start tag as written
	empty    bool   // an element written <name/>
	elem     bool
	children []*xmlNode
}

// parseXML parses doc into a tree that writes back to the same bytes. It knows what S3
// listings contain: elements, attributes, escaped text, the XML declaration and comments; a
// CDATA section or a DOCTYPE is refused rather than rewritten wrongly.
func parseXML(doc []byte) (*xmlNode, error) {
	s := string(doc)
	root := &xmlNode{elem: true}
	stack := []*xmlNode{root}
	for i := 0; i < len(s); {
		top := stack[len(stack)-1]
		if s[i] != '<' {
			j := strings.IndexByte(s[i:], '<')
			if j < 0 {
				j = len(s) - i
			}
			top.children = append(top.children, &xmlNode{raw: s[i : i+j]})
			i += j
			continue
		}
		rest := s[i:]
		var end string
		switch {
		case strings.HasPrefix(rest, "<?"):
			end = "?>"
		case strings.HasPrefix(rest, "<!--"):
			end = "-->"
		case strings.HasPrefix(rest, "<!"):
			return nil, fmt.Errorf("faultproxy: cannot rewrite XML with %.12q", rest)
		}
		if end != "" {
			j := strings.Index(rest, end)
			if j < 0 {
				return nil, fmt.Errorf("faultproxy: unterminated %.12q in XML", rest)
			}
			top.children = append(top.children, &xmlNode{raw: rest[:j+len(end)]})
			i += j + len(end)
			continue
		}
		j := tagEnd(rest)
		if j < 0 {
			return nil, fmt.Errorf("faultproxy: unterminated tag %.20q in XML", rest)
		}
		tag := rest[:j+1]
		i += j + 1
		if strings.HasPrefix(tag, "</") {
			name := strings.TrimSpace(tag[2 : len(tag)-1])
			if top == root || name != top.name {
				return nil, fmt.Errorf("faultproxy: unexpected %q in XML", tag)
			}
			stack = stack[:len(stack)-1]
			continue
		}
		name := tag[1:]
		if k := strings.IndexAny(name, " \t\r\n/>"); k >= 0 {
			name = name[:k]
		}
		if name == "" {
			return nil, fmt.Errorf("faultproxy: bad tag %q in XML", tag)
		}
		n := &xmlNode{name: name, raw: tag, elem: true, empty: strings.HasSuffix(tag, "/>")}
		top.children = append(top.children, n)
		if !n.empty {
			stack = append(stack, n)
		}
	}
	if len(stack) != 1 {
		return nil, fmt.Errorf("faultproxy: unclosed <%s> in XML", stack[len(stack)-1].name)
	}
	return root, nil
}

// tagEnd returns the index of the '>' that ends the tag at the start of s, skipping quoted
// attribute values, or -1.
func tagEnd(s string) int {
	var quote byte
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '>':
			return i
		}
	}
	return -1
}

// bytes writes the tree back as XML.
func (n *xmlNode) bytes() []byte {
	var b bytes.Buffer
	n.write(&b)
	return b.Bytes()
}

func (n *xmlNode) write(b *bytes.Buffer) {
	if !n.elem {
		b.WriteString(n.raw)
		return
	}
	if n.name != "" {
		if n.empty && len(n.children) == 0 {
			b.WriteString(n.raw)
			return
		}
		if n.empty { // <name/> that was given content
			b.WriteString(strings.TrimSpace(strings.TrimSuffix(n.raw, "/>")) + ">")
		} else {
			b.WriteString(n.raw)
		}
	}
	for _, c := range n.children {
		c.write(b)
	}
	if n.name != "" {
		b.WriteString("</" + n.name + ">")
	}
}

// child returns n's first child element called name, or nil.
func (n *xmlNode) child(name string) *xmlNode {
	for _, c := range n.children {
		if c.elem && c.name == name {
			return c
		}
	}
	return nil
}

// elements returns n's child elements called name.
func (n *xmlNode) elements(name string) []*xmlNode {
	var out []*xmlNode
	for _, c := range n.children {
		if c.elem && c.name == name {
			out = append(out, c)
		}
	}
	return out
}

// text returns the character data of an element that holds nothing else, unescaped as an
// XML reader (encoding/xml, which the AWS SDK uses) reads it.
func (n *xmlNode) text() (string, error) {
	var raw strings.Builder
	for _, c := range n.children {
		if c.elem {
			return "", fmt.Errorf("faultproxy: <%s> holds elements, not text", n.name)
		}
		raw.WriteString(c.raw)
	}
	var v string
	if err := xml.Unmarshal([]byte("<"+n.name+">"+raw.String()+"</"+n.name+">"), &v); err != nil {
		return "", fmt.Errorf("faultproxy: the text of <%s>: %w", n.name, err)
	}
	return v, nil
}

// setText makes v, escaped, the element's only content.
func (n *xmlNode) setText(v string) {
	var esc bytes.Buffer
	xml.EscapeText(&esc, []byte(v))
	n.children = []*xmlNode{{raw: esc.String()}}
}

// element returns n's child element name, added at the end of n if it has none.
func (n *xmlNode) element(name string) *xmlNode {
	c := n.child(name)
	if c == nil {
		c = &xmlNode{name: name, raw: "<" + name + ">", elem: true}
		n.children = append(n.children, c)
	}
	return c
}

// set gives n's child element name the text v, adding the element at the end of n if it has
// none.
func (n *xmlNode) set(name, v string) { n.element(name).setText(v) }
