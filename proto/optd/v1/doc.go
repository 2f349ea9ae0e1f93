// Package optdv1 is the versioned gRPC API optd.v1 (docs/formats.md#grpc): the
// .proto in this directory and the Go generated from it, checked in.
//
// Regenerate with scripts/generate.sh (go generate ./...). It needs protoc
// (Debian protobuf-compiler 3.21); protoc-gen-go and protoc-gen-go-grpc are
// the versions pinned as tools in go.mod, run through `go tool -n`, so the
// output is the same on every machine with the same protoc.
package optdv1

//go:generate sh -c "protoc --plugin=protoc-gen-go=$(go tool -n protoc-gen-go) --plugin=protoc-gen-go-grpc=$(go tool -n protoc-gen-go-grpc) --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative optd.proto"
