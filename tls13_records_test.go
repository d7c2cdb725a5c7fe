package aio

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/tls"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// tls13Records writes TLS 1.3 records by hand on the connection of a
// crypto/tls client whose handshake has ended, with the client traffic
// secret its KeyLogWriter told (TLS_AES_128_GCM_SHA256 only): what
// crypto/tls's client never sends, a KeyUpdate flood say. Only the write
// side: what the server sends back is not read.
type tls13Records struct {
	secret []byte
	aead   cipher.AEAD
	iv     []byte
	seq    uint64
}

// tls13Dial runs crypto/tls's client handshake over nc, TLS 1.3, and
// returns the record writer that takes over from it. crypto/tls chooses
// AES-128-GCM on a machine with AES instructions, the one suite written
// here; elsewhere the test fails, saying so.
func tls13Dial(t *testing.T, nc net.Conn, cfg *tls.Config) *tls13Records {
	t.Helper()
	var log bytes.Buffer
	cfg = cfg.Clone()
	cfg.KeyLogWriter = &log
	cfg.MinVersion = tls.VersionTLS13
	tc := tls.Client(nc, cfg)
	require.NoError(t, tc.Handshake())
	require.Equal(t, tls.TLS_AES_128_GCM_SHA256, tc.ConnectionState().CipherSuite, "the suite these records are written for")
	w := &tls13Records{}
	for line := range strings.SplitSeq(log.String(), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "CLIENT_TRAFFIC_SECRET_0" {
			secret, err := hex.DecodeString(f[2])
			require.NoError(t, err)
			w.setKeys(secret)
		}
	}
	require.NotNil(t, w.aead, "no client traffic secret logged")
	return w
}

// expandLabel is TLS 1.3's HKDF-Expand-Label (RFC 8446 §7.1), SHA-256.
func expandLabel(secret []byte, label string, n int) []byte {
	full := "tls13 " + label
	info := append([]byte{byte(n >> 8), byte(n), byte(len(full))}, full...)
	info = append(info, 0) // no context
	out, err := hkdf.Expand(func() hash.Hash { return sha256.New() }, secret, string(info), n)
	if err != nil {
		panic(err)
	}
	return out
}

// setKeys derives the record keys of a traffic secret (RFC 8446 §7.3).
func (w *tls13Records) setKeys(secret []byte) {
	w.secret = secret
	block, err := aes.NewCipher(expandLabel(secret, "key", 16))
	if err != nil {
		panic(err)
	}
	if w.aead, err = cipher.NewGCM(block); err != nil {
		panic(err)
	}
	w.iv, w.seq = expandLabel(secret, "iv", 12), 0
}

// seal returns one record of inner content type typ.
func (w *tls13Records) seal(typ byte, content []byte) []byte {
	inner := append(bytes.Clone(content), typ)
	n := len(inner) + w.aead.Overhead()
	hdr := []byte{23, 3, 3, byte(n >> 8), byte(n)} // application_data, TLS 1.2 on the wire
	nonce := bytes.Clone(w.iv)
	var seq [8]byte
	binary.BigEndian.PutUint64(seq[:], w.seq)
	for i := range seq {
		nonce[4+i] ^= seq[i]
	}
	w.seq++
	return w.aead.Seal(hdr, nonce, inner, hdr)
}

// data returns an application data record of b.
func (w *tls13Records) data(b []byte) []byte { return w.seal(23, b) }

// keyUpdate returns a KeyUpdate record asking the peer to update too
// (update_requested), and moves the client's keys on.
func (w *tls13Records) keyUpdate() []byte { return w.keyUpdateAsking(true) }

// keyUpdateAsking is keyUpdate, asking the peer to update too or not.
func (w *tls13Records) keyUpdateAsking(answer bool) []byte {
	requested := byte(0)
	if answer {
		requested = 1
	}
	rec := w.seal(22, []byte{24, 0, 0, 1, requested})
	w.setKeys(expandLabel(w.secret, "traffic upd", sha256.Size))
	return rec
}
