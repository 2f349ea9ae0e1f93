package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"

	"github.com/optd/optd/policy/placement"
	optdv1 "github.com/optd/optd/proto/optd/v1"
)

// testPKI is a CA, a server certificate for 127.0.0.1 and a client
// certificate, written as PEM files.
type testPKI struct {
	dir                           string
	caPool                        *x509.CertPool
	serverCert, serverKey, caFile string
	client                        tls.Certificate
}

func newPKI(t *testing.T) *testPKI {
	t.Helper()
	p := &testPKI{dir: t.TempDir(), caPool: x509.NewCertPool()}
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "optd test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	p.caPool.AddCert(ca)
	p.caFile = p.write(t, "ca.pem", "CERTIFICATE", caDER)
	issue := func(serial int64, usage x509.ExtKeyUsage) ([]byte, *ecdsa.PrivateKey) {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "optd"},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			KeyUsage: x509.KeyUsageDigitalSignature}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return der, key
	}
	sDER, sKey := issue(2, x509.ExtKeyUsageServerAuth)
	p.serverCert = p.write(t, "server.pem", "CERTIFICATE", sDER)
	skDER, _ := x509.MarshalECPrivateKey(sKey)
	p.serverKey = p.write(t, "server-key.pem", "EC PRIVATE KEY", skDER)
	cDER, cKey := issue(3, x509.ExtKeyUsageClientAuth)
	p.client = tls.Certificate{Certificate: [][]byte{cDER}, PrivateKey: cKey}
	return p
}

func (p *testPKI) write(t *testing.T, name, typ string, der []byte) string {
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestTLSAndMTLS(t *testing.T) {
	pki := newPKI(t)
	for _, mtls := range []bool{false, true} {
		name := map[bool]string{false: "tls", true: "mtls"}[mtls]
		t.Run(name, func(t *testing.T) {
			ca := ""
			if mtls {
				ca = pki.caFile
			}
			cfg, err := LoadTLS(pki.serverCert, pki.serverKey, ca)
			if err != nil {
				t.Fatal(err)
			}
			client := &tls.Config{RootCAs: pki.caPool, MinVersion: tls.VersionTLS12}
			if mtls {
				client.Certificates = []tls.Certificate{pki.client}
			}
			ts := startServer(t, "", Options{TLS: cfg}, client)
			ctx := ctxT(t)
			waitServing(t, ts.conn)
			if _, err := ts.cluster.RegisterCluster(ctx, costsCluster("c", placement.NameGreedy, 1, 2)); err != nil {
				t.Fatalf("with a valid client: %v", err)
			}
			if !mtls {
				return
			}
			// Without a client certificate the handshake fails.
			bare := startClient(t, ts.addr, &tls.Config{RootCAs: pki.caPool, MinVersion: tls.VersionTLS12})
			sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			_, err = bare.GetClusterState(sctx, &optdv1.GetClusterStateRequest{ClusterId: "c"})
			wantCode(t, err, codes.Unavailable, "")
		})
	}
	if _, err := LoadTLS(pki.serverCert, pki.serverKey, pki.serverKey); err == nil || !strings.Contains(err.Error(), "tls.client_ca_file") {
		t.Errorf("a key as CA bundle: err = %v", err)
	}
}

func TestMetricsEndpoint(t *testing.T) {
	m := NewMetrics()
	ts := startServer(t, "", Options{Metrics: m}, nil)
	ctx := ctxT(t)
	ts.cluster.RegisterCluster(ctx, costsCluster("c", placement.NameGreedy, 1, 2))
	ts.cluster.SubmitJob(ctx, &optdv1.SubmitJobRequest{ClusterId: "c", JobId: "j", Reduces: 1})
	ts.cluster.PlaceReduces(ctx, &optdv1.PlaceReducesRequest{ClusterId: "c", JobId: "j", DataMb: 1})
	mctx, cancel := context.WithCancel(ctx)
	defer cancel()
	addr, err := ServeMetrics(mctx, "127.0.0.1:0", m, ts.discardLog(), nil, "")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + addr.String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`optd_rpc_duration_seconds_count{code="OK",method="/optd.v1.ClusterService/PlaceReduces"} 1`,
		`optd_placement_decisions_total{policy="greedy"} 1`,
		`optd_solver_duration_seconds_count{solver="placement"} 1`,
		// RegisterCluster, SubmitJob and PlaceReduces, one after the
		// other: three synced batches.
		`optd_store_wal_sync_seconds_count 3`,
		`optd_store_wal_group_changes_sum 3`,
		"optd_store_read_only 0",
		"optd_store_failed 0",
		"optd_store_disk_bytes ",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestSecurityEdges: the bearer scheme in any case, reflection without the
// token (grpcurl as in the README), /metrics behind the same TLS and
// token, loose secret files refused, and a warning for a listener beyond
// loopback without TLS and a token.
func TestSecurityEdges(t *testing.T) {
	ts := startServer(t, "", Options{Token: "s3cret"}, nil)
	for _, auth := range []string{"Bearer s3cret", "bearer s3cret", "BEARER  s3cret"} {
		ctx := metadata.AppendToOutgoingContext(ctxT(t), "authorization", auth)
		if _, err := ts.cluster.ListClusters(ctx, &optdv1.ListClustersRequest{}); err != nil {
			t.Errorf("authorization %q: %v", auth, err)
		}
	}
	for _, auth := range []string{"Basic s3cret", "Bearer", "s3cret", "Bearer s3cre"} {
		ctx := metadata.AppendToOutgoingContext(ctxT(t), "authorization", auth)
		_, err := ts.cluster.ListClusters(ctx, &optdv1.ListClustersRequest{})
		wantCode(t, err, codes.Unauthenticated, "")
	}
	// Reflection answers without the token.
	rc, err := reflectionpb.NewServerReflectionClient(ts.conn).ServerReflectionInfo(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	if r, err := rc.Recv(); err != nil || len(r.GetListServicesResponse().GetService()) == 0 {
		t.Errorf("reflection without a token: %v, %v", r, err)
	}
	rc.CloseSend()

	// /metrics with TLS and the token.
	pki := newPKI(t)
	cfg, err := LoadTLS(pki.serverCert, pki.serverKey, "")
	if err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	addr, err := ServeMetrics(mctx, "127.0.0.1:0", NewMetrics(), ts.discardLog(), cfg, "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pki.caPool, MinVersion: tls.VersionTLS12}}}
	for _, tc := range []struct {
		auth string
		code int
	}{{"", http.StatusUnauthorized}, {"Bearer nope", http.StatusUnauthorized}, {"bearer s3cret", http.StatusOK}} {
		req, _ := http.NewRequest("GET", "https://"+addr.String()+"/metrics", nil)
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("/metrics with %q: %d, want %d", tc.auth, resp.StatusCode, tc.code)
		}
	}
	if resp, err := http.Get("http://" + addr.String() + "/metrics"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("/metrics answered plain HTTP with TLS configured")
		}
	}

	// Secret files open to others are refused; private ones are read.
	dir := t.TempDir()
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604, 0o600, 0o400} {
		path := filepath.Join(dir, fmt.Sprintf("token-%o", mode))
		if err := os.WriteFile(path, []byte("tok\n"), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(path, mode)
		tok, err := ReadToken(path)
		if open := mode&0o077 != 0; open != (err != nil) || (!open && tok != "tok") {
			t.Errorf("token file of mode %04o: %q, %v", mode, tok, err)
		} else if open && !strings.Contains(err.Error(), "chmod 600") {
			t.Errorf("token file of mode %04o: %v does not say what to do", mode, err)
		}
	}
	os.Chmod(pki.serverKey, 0o644)
	if _, err := LoadTLS(pki.serverCert, pki.serverKey, ""); err == nil || !strings.Contains(err.Error(), "tls.key_file") {
		t.Errorf("a key file of mode 0644: err = %v", err)
	}
}

// TestExposedListenerWarned: a listener on every interface without TLS and
// a token is warned about; on loopback it is not.
func TestExposedListenerWarned(t *testing.T) {
	for _, tc := range []struct {
		listen string
		warn   bool
	}{{"0.0.0.0:0", true}, {"127.0.0.1:0", false}} {
		r := start(t, Options{Listen: tc.listen})
		r.waitServing(t)
		r.stop(t)
		warned := false
		for _, rec := range r.logs.records(t) {
			warned = warned || strings.HasPrefix(fmt.Sprint(rec["msg"]), "listening beyond loopback")
		}
		if warned != tc.warn {
			t.Errorf("listen %s: warned %v, want %v", tc.listen, warned, tc.warn)
		}
	}
}
