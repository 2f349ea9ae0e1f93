package server

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"
)

// LoadTLS builds the server's TLS configuration from PEM files: the server
// certificate and key, and, if clientCAFile is set, the CA bundle that
// client certificates must chain to (mTLS: clients without one are refused
// during the handshake). TLS 1.2 is the minimum.
func LoadTLS(certFile, keyFile, clientCAFile string) (*tls.Config, error) {
	if err := checkPrivate("tls.key_file", keyFile); err != nil {
		return nil, err
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("server: tls.cert_file %q / tls.key_file %q: %w", certFile, keyFile, err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if clientCAFile != "" {
		pem, err := os.ReadFile(clientCAFile)
		if err != nil {
			return nil, fmt.Errorf("server: tls.client_ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("server: tls.client_ca_file %q: no PEM certificate in it", clientCAFile)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// checkPrivate refuses a secret file (a private key, a token) that users
// other than its owner may read or write, as ssh refuses such a key: a
// secret anyone on the machine can read protects nothing.
func checkPrivate(key, path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("server: %s: %w", key, err)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("server: %s %q has mode %04o, open to other users: make it private (chmod 600)", key, path, perm)
	}
	return nil
}

// ReadToken reads the bearer token from path, trimming surrounding white
// space; an empty token, or a file others may read, is an error.
func ReadToken(path string) (string, error) {
	if err := checkPrivate("auth.token_file", path); err != nil {
		return "", err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("server: auth.token_file: %w", err)
	}
	tok := strings.TrimSpace(string(data))
	if tok == "" {
		return "", fmt.Errorf("server: auth.token_file %q is empty", path)
	}
	return tok, nil
}
