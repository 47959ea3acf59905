package adminapi

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

// Identity is who a matched token belongs to: its Name and Role, never its
// secret.
type Identity struct {
	Name string
	Role string
}

// CanRead reports whether the identity may read (RoleRead or RoleAdmin).
func (id Identity) CanRead() bool { return id.Role == RoleAdmin || id.Role == RoleRead }

// Tokens checks secrets against a fixed set of tokens. The admin API and
// the dashboard share one, so both accept exactly the same secrets.
type Tokens struct {
	list []tokenDigest
}

type tokenDigest struct {
	id  Identity
	sum [sha256.Size]byte
}

// NewTokens keeps the digests of tokens' secrets; tokens with an empty
// secret are dropped (an empty secret never matches).
func NewTokens(tokens []Token) *Tokens {
	t := &Tokens{}
	for _, tok := range tokens {
		if tok.Secret == "" {
			continue
		}
		t.list = append(t.list, tokenDigest{id: Identity{Name: tok.Name, Role: tok.Role}, sum: sha256.Sum256([]byte(tok.Secret))})
	}
	return t
}

// Match returns the identity whose secret is secret. Secrets are compared
// as SHA-256 digests in constant time against every configured token, so
// neither which token matched nor a secret's length shows in the timing.
func (t *Tokens) Match(secret string) (Identity, bool) {
	if secret == "" {
		return Identity{}, false
	}
	sum := sha256.Sum256([]byte(secret))
	var found *Identity
	for i := range t.list {
		if subtle.ConstantTimeCompare(sum[:], t.list[i].sum[:]) == 1 && found == nil {
			found = &t.list[i].id
		}
	}
	if found == nil {
		return Identity{}, false
	}
	return *found, true
}

// Bearer returns the identity of the bearer token in r's Authorization
// header. Any other scheme (Basic included) matches nothing: the API's
// writes must never be authorised by credentials a browser attaches on
// its own.
func (t *Tokens) Bearer(r *http.Request) (Identity, bool) {
	scheme, secret, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return Identity{}, false
	}
	return t.Match(strings.TrimSpace(secret))
}

// Sign returns the HMAC-SHA256 of msg keyed by the secret of the token
// named name (its digest: the secret itself is not kept), and false when
// no token has that name. Every replica configured with the same tokens
// signs alike, so what one replica signs another verifies; a token's
// change invalidates its signatures.
func (t *Tokens) Sign(name string, msg []byte) ([]byte, Identity, bool) {
	for i := range t.list {
		if t.list[i].id.Name == name {
			mac := hmac.New(sha256.New, t.list[i].sum[:])
			mac.Write(msg)
			return mac.Sum(nil), t.list[i].id, true
		}
	}
	return nil, Identity{}, false
}

type identityKey struct{}

// WithIdentity returns ctx carrying id, authenticated already by the
// caller in this process (the dashboard, which checked a signed action
// key and the request's origin): the API then takes the request as id's
// instead of reading its Authorization header. Nothing a client sends can
// set it.
func WithIdentity(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// identityOf returns the identity WithIdentity put in r's context, else
// the bearer token's.
func (t *Tokens) identityOf(r *http.Request) (Identity, bool) {
	if id, ok := r.Context().Value(identityKey{}).(Identity); ok {
		return id, true
	}
	return t.Bearer(r)
}
