package dirbucket

import (
	"context"
	"encoding/xml"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// sessionLifetime is how long S3 Express session credentials last.
const sessionLifetime = 5 * time.Minute

// session is the credentials CreateSession issued with one token.
type session struct {
	accessKey, secretKey string
	expires              time.Time
}

// createSession answers CreateSession, which must be signed with the long-term keys.
func (s *Server) createSession(w http.ResponseWriter, r *http.Request) {
	if msg := verify(r, s.AccessKey, s.SecretKey, "s3express"); msg != "" {
		s.fail(w, http.StatusForbidden, "AccessDenied", "CreateSession: "+msg)
		return
	}
	token := randomHex(24)
	sess := session{accessKey: "S3EXPRESS" + strings.ToUpper(randomHex(6)), secretKey: randomHex(20), expires: time.Now().Add(sessionLifetime).UTC()}
	s.mu.Lock()
	s.sessions[token] = sess
	s.counts.CreateSession++
	s.mu.Unlock()
	type credentials struct {
		SessionToken, SecretAccessKey, AccessKeyId string
		Expiration                                 string
	}
	w.Header().Set("Content-Type", "application/xml")
	xml.NewEncoder(w).Encode(struct {
		XMLName     xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ CreateSessionResult"`
		Credentials credentials
	}{Credentials: credentials{SessionToken: token, SecretAccessKey: sess.secretKey, AccessKeyId: sess.accessKey, Expiration: sess.expires.Format(time.RFC3339)}})
}

// authenticate returns why r may not be served, or "". A directory bucket takes requests
// signed with a live session's keys for the s3express service and carrying its token; a
// general-purpose one, requests signed with the long-term keys for s3.
func (s *Server) authenticate(r *http.Request) string {
	if s.general {
		return verify(r, s.AccessKey, s.SecretKey, "s3")
	}
	token := r.Header.Get("X-Amz-S3session-Token")
	if token == "" {
		return "a directory bucket takes requests with a session token only (x-amz-s3session-token, from CreateSession)"
	}
	s.mu.Lock()
	sess, ok := s.sessions[token]
	s.mu.Unlock()
	if !ok {
		return "the session token is not one CreateSession issued"
	}
	if time.Now().After(sess.expires) {
		return "the session token has expired"
	}
	return verify(r, sess.accessKey, sess.secretKey, "s3express")
}

// verify checks r's SigV4 signature against the keys and service, by signing the headers
// r says it signed as the SDK's signer would and comparing the signatures.
func verify(r *http.Request, accessKey, secretKey, service string) string {
	auth := r.Header.Get("Authorization")
	const algo = "AWS4-HMAC-SHA256 "
	if !strings.HasPrefix(auth, algo) {
		return "the request is not signed with SigV4"
	}
	var cred, signed, sig string
	for _, f := range strings.Split(auth[len(algo):], ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(f), "=")
		switch k {
		case "Credential":
			cred = v
		case "SignedHeaders":
			signed = v
		case "Signature":
			sig = v
		}
	}
	scope := strings.Split(cred, "/") // key/date/region/service/aws4_request
	if len(scope) != 5 || scope[0] != accessKey || scope[3] != service {
		return "the request is signed for " + cred + ", not with key " + accessKey + " for " + service
	}
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return "the request has no valid X-Amz-Date"
	}
	path, _, _ := strings.Cut(r.RequestURI, "?")
	req, err := http.NewRequest(r.Method, "http://"+r.Host+"/", nil)
	if err != nil {
		return err.Error()
	}
	req.URL.Opaque = "//" + r.Host + path // the path exactly as sent
	req.URL.RawQuery = r.URL.RawQuery
	req.Host = r.Host
	for _, h := range strings.Split(signed, ";") {
		if h != "host" {
			req.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
		}
	}
	signer := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
	creds := aws.Credentials{AccessKeyID: accessKey, SecretAccessKey: secretKey}
	if err := signer.SignHTTP(context.Background(), creds, req, r.Header.Get("X-Amz-Content-Sha256"), service, scope[2], at); err != nil {
		return err.Error()
	}
	if !strings.HasSuffix(req.Header.Get("Authorization"), "Signature="+sig) {
		return "the signature does not match"
	}
	return ""
}
