package listing

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"testing"
)

// gen writes random ListBucketResult documents mixing what the fast parser must decode
// with what it must refuse: every field in any case, text with references, CDATA,
// comments, attributes, unknown elements, odd numbers and timestamps, and now and then a
// broken document. Two documents in three are S3-shaped (s3like): their text is what S3 sends
// for EncodingType=url (ASCII, the predefined entities), so that the fast parser's own
// path, and not only its hand-over to the SDK, is what they exercise.
type gen struct {
	rng    *rand.Rand
	b      bytes.Buffer
	s3like bool
}

// pick returns one of the choices.
func (g *gen) pick(choices ...string) string { return choices[g.rng.IntN(len(choices))] }

// chance is true with probability 1/n.
func (g *gen) chance(n int) bool { return g.rng.IntN(n) == 0 }

// caseOf spells name in a random case now and then.
func (g *gen) caseOf(name string) string {
	if !g.chance(8) {
		return name
	}
	b := []byte(name)
	for i := range b {
		if g.chance(2) {
			b[i] ^= 0x20
		}
	}
	return string(b)
}

// text writes character data, escaped or not.
func (g *gen) text() {
	for range g.rng.IntN(6) {
		if g.s3like && !g.chance(60) {
			g.b.WriteString(g.pick("data/2024/", "part-0001.json", " ", "a b", "%20", "%C3%BC", "]", "]]",
				"&amp;", "&lt;", "&gt;", "&quot;", "&apos;", "&#34;", "&#x27;", "&#9;", "\n", "\t", "'", "\""))
			continue
		}
		if g.chance(60) {
			g.b.WriteString(g.pick("&#x1;", "&#0;", "&#xFFFE;", "&#x110000;", "&#;", "&#x;", "&nbsp;", "&amp",
				"&#X41;", "]]>", "\x01", "\xff", "\uFFFE", "<", "&"))
			continue
		}
		g.b.WriteString(g.pick("data/2024/", "part-0001.json", " ", "a b", "ü", "日本", "😀", "%20", "]", "]]",
			"&amp;", "&lt;", "&gt;", "&quot;", "&apos;", "&#34;", "&#x22;", "&#13;", "&#10;", "&#9;", "&#x1F600;",
			"&#xD800;", "&#0065;", "\r", "\r\n", "\n", "\t", "'", "\"", ">", "\u0085", "\u2028", "\U0010FFFD"))
	}
}

// value writes the content of a simple element whose text is one of vals.
func (g *gen) value(name string, vals ...string) {
	n := g.caseOf(name)
	switch g.rng.IntN(12) {
	case 0:
		fmt.Fprintf(&g.b, "<%s/>", n)
		return
	case 1:
		fmt.Fprintf(&g.b, "<%s></%s>", n, n)
		return
	case 2:
		if g.s3like {
			fmt.Fprintf(&g.b, "<%s>%s</%s>", n, g.pick(append(vals, "a&lt;b&gt;&amp;", "]")...), n)
			return
		}
		fmt.Fprintf(&g.b, "<%s><![CDATA[%s]]></%s>", n, g.pick(append(vals, "a<b>&amp;", "x\r\ny", "]")...), n)
		return
	case 3:
		attr := g.pick(`a="1"`, `b='&lt;'`, `c="]]>"`, `d = "x"`, "e=\"\r\n\"", `f:g="h"`)
		if g.s3like {
			attr = g.pick(`a="1"`, `b='&lt;'`, `d = "x"`, `f:g="h"`)
		}
		if g.chance(10) {
			attr = g.pick(`e="<"`, `f=g`, `a:b:c="1"`, `h="&x;"`)
		}
		fmt.Fprintf(&g.b, "<%s %s>", n, attr)
	default:
		fmt.Fprintf(&g.b, "<%s>", n)
	}
	if len(vals) > 0 && !g.chance(6) {
		g.b.WriteString(g.pick(vals...))
	} else {
		g.text()
	}
	if g.chance(100) {
		g.b.WriteString(g.pick("<!--c-->", "<![CDATA[x]]>", "<x/>"))
	}
	fmt.Fprintf(&g.b, "</%s%s>", n, g.pick("", "", "", " "))
}

// between writes what may come between elements.
func (g *gen) between() {
	if g.s3like && !g.chance(20) {
		if g.chance(5) {
			g.b.WriteString(g.pick("\n  ", " ", "\t"))
		}
		return
	}
	switch g.rng.IntN(10) {
	case 0:
		g.b.WriteString(g.pick("\n  ", "\r\n", " ", "\t"))
	case 1:
		g.b.WriteString(g.pick("<!-- comment -->", "<!---->", "<!-- a - b -->", "<!-- <Contents> -->"))
	case 2:
		g.b.WriteString(g.pick("junk", "<![CDATA[<Key>x</Key>]]>", " ]] "))
	case 3:
		if g.chance(20) {
			g.b.WriteString(g.pick("<?pi x?>", "<!DOCTYPE x>", "<!-- a -- b -->", "<!-x->"))
		}
	}
}

// unknown writes an element the output has no field for.
func (g *gen) unknown(depth int) {
	n := g.pick("Unknown", "x-y.z", "_a1", "Foo")
	if g.chance(3) {
		fmt.Fprintf(&g.b, "<%s/>", n)
		return
	}
	fmt.Fprintf(&g.b, "<%s>", n)
	for range g.rng.IntN(3) {
		if depth < 3 && g.chance(2) {
			g.unknown(depth + 1)
		} else {
			g.between()
			g.text()
		}
	}
	fmt.Fprintf(&g.b, "</%s>", n)
}

// doc returns a new document.
func (g *gen) doc() []byte {
	g.b.Reset()
	g.s3like = !g.chance(3)
	if g.s3like {
		g.b.WriteString(g.pick("", `<?xml version="1.0" encoding="UTF-8"?>`+"\n", `<?xml version="1.0" encoding="UTF-8"?>`))
	} else {
		g.b.WriteString(g.pick("", "", `<?xml version="1.0" encoding="UTF-8"?>`+"\n", `<?xml version='1.0'?>`,
			`<?xml version="1.0" encoding="utf-8" standalone="no" ?>`, "<!-- c -->\n", " "))
	}
	if g.chance(30) {
		g.b.WriteString(g.pick(`<?xml version="1.1"?>`, `<?xml version = "1.0"?>`, "\uFEFF", "x", `<!DOCTYPE a>`))
	}
	root := g.caseOf("ListBucketResult")
	fmt.Fprintf(&g.b, "<%s%s>", root, g.pick("", ` xmlns="http://s3.amazonaws.com/doc/2006-03-01/"`, ` a='1' b="2"`))
	times := []string{"2024-01-02T03:04:05.678Z", "2024-01-02T03:04:05Z", "2024-01-02T03:04:05.1234567891Z",
		"2024-01-02T03:04:05+01:00", "0000-01-01T00:00:00Z", "2024-02-29T23:59:59.9Z"}
	if g.chance(10) {
		times = []string{"2024-02-30T00:00:00Z", "2024-01-02T03:04:05.Z", "2024-01-02 03:04:05Z"}
	}
	for range g.rng.IntN(12) {
		g.between()
		switch g.rng.IntN(16) {
		case 0, 1, 2, 3, 4, 5:
			o := g.caseOf("Contents")
			fmt.Fprintf(&g.b, "<%s>", o)
			for range g.rng.IntN(9) {
				g.between()
				switch g.rng.IntN(12) {
				case 0, 1:
					g.value("Key")
				case 2:
					g.value("ETag", `&quot;0123&quot;`, `"x"`)
				case 3:
					g.value("Size", "0", "1234", "+5", "-1", "007", "9223372036854775807", g.pick("1", "9223372036854775808", "1e3", " 1"))
				case 4:
					g.value("LastModified", times...)
				case 5:
					g.value(g.pick("StorageClass", "ChecksumAlgorithm", "ChecksumType"), "STANDARD", "CRC32", "FULL_OBJECT", "Other")
				case 6:
					r := g.caseOf("RestoreStatus")
					fmt.Fprintf(&g.b, "<%s>", r)
					g.value("IsRestoreInProgress", "true", "false", "1", "TRUE", g.pick("t", "yes"))
					g.value("RestoreExpiryDate", times...)
					fmt.Fprintf(&g.b, "</%s>", r)
				case 7:
					fmt.Fprintf(&g.b, "<Owner>")
					g.value(g.pick("ID", "DisplayName"))
					fmt.Fprintf(&g.b, "</Owner>")
				default:
					g.unknown(0)
				}
			}
			fmt.Fprintf(&g.b, "</%s>", o)
		case 6:
			fmt.Fprintf(&g.b, "<CommonPrefixes>")
			g.value("Prefix")
			fmt.Fprintf(&g.b, "</CommonPrefixes>")
		case 7:
			g.value(g.pick("Name", "Prefix", "Delimiter", "StartAfter", "ContinuationToken", "NextContinuationToken"))
		case 8:
			g.value(g.pick("KeyCount", "MaxKeys"), "0", "1000", "4294967297", "-1", g.pick("1", "x"))
		case 9:
			g.value("IsTruncated", "true", "false", "T", "0", g.pick("f", "no"))
		case 10:
			g.value("EncodingType", "url")
		default:
			g.unknown(0)
		}
	}
	fmt.Fprintf(&g.b, "</%s>", root)
	doc := g.b.Bytes()
	if g.chance(20) {
		doc = doc[:g.rng.IntN(len(doc)+1)]
	}
	return doc
}

// TestListXMLGenerated checks the fast parser against the SDK on generated documents: it
// must refuse or decode each exactly as the SDK does.
func TestListXMLGenerated(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 300
	}
	tr := &transport{}
	c := newClient("http://s3.test", &http.Client{Transport: tr})
	g := &gen{rng: rand.New(rand.NewPCG(7, 11))}
	decoded := 0
	for i := range n {
		doc := g.doc()
		tr.resp = response{status: 200, body: doc}
		direct, err := parsePage(doc)
		sdkOut, sdkErr := c.ListObjectsV2(context.Background(), input())
		sdk := pageOrNil(sdkOut)
		if err == nil {
			decoded++
			checkSame(t, doc, sdk, direct, sdkErr, nil)
		}
		if i%10 == 0 {
			fast, fastErr := c.ListObjectsV2(context.Background(), input(), pageDecoding(nil))
			checkSame(t, doc, sdk, pageOrNil(fast), sdkErr, fastErr)
		}
	}
	// The generator must exercise the decoder, not only its refusals.
	if decoded < n/5 {
		t.Errorf("the fast parser decoded only %d of %d documents", decoded, n)
	}
	t.Logf("decoded %d of %d documents", decoded, n)
}
