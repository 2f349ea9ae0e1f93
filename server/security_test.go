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
	addr, err := ServeMetrics(mctx, "127.0.0.1:0", m, ts.discardLog())
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
