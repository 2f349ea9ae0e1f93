package server

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Requests with a string field that is not valid UTF-8 fail to decode; grpc
// answers a codec's error with Internal before any interceptor runs. The
// server's codec (requestCodec) therefore decodes such a request as empty
// and marks it with the path of the bad field in an unknown field of number
// badUTF8Field, and checkDecoded (in the request-checking interceptors)
// answers InvalidArgument naming the field.
const badUTF8Field protowire.Number = protowire.MaxValidNumber

// requestCodec is grpc's proto codec with the marking above.
type requestCodec struct{ encoding.CodecV2 }

func newRequestCodec() requestCodec { return requestCodec{encoding.GetCodecV2("proto")} }

func (c requestCodec) Unmarshal(data mem.BufferSlice, v any) error {
	err := c.CodecV2.Unmarshal(data, v)
	m, ok := v.(proto.Message)
	if err == nil || !ok || !strings.Contains(err.Error(), "UTF-8") {
		return err
	}
	buf := data.Materialize()
	path := badUTF8Path(buf, m.ProtoReflect().Descriptor(), "")
	if path == "" {
		return err
	}
	proto.Reset(m)
	m.ProtoReflect().SetUnknown(protowire.AppendString(protowire.AppendTag(nil, badUTF8Field, protowire.BytesType), path))
	return nil
}

// badUTF8Path returns the path (e.g. "nodes[2].id") of the first string
// field of the encoded message that is not valid UTF-8, "" if none.
func badUTF8Path(b []byte, md protoreflect.MessageDescriptor, prefix string) string {
	counts := map[protowire.Number]int{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return ""
		}
		b = b[n:]
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return ""
		}
		val := b[:n]
		b = b[n:]
		fd := md.Fields().ByNumber(num)
		if fd == nil || typ != protowire.BytesType {
			continue
		}
		payload, _ := protowire.ConsumeBytes(val)
		name := prefix + string(fd.Name())
		if fd.IsList() {
			name = fmt.Sprintf("%s[%d]", name, counts[num])
			counts[num]++
		}
		switch {
		case fd.IsMap():
			if p := badUTF8Path(payload, fd.Message(), name+"."); p != "" {
				return p
			}
		case fd.Kind() == protoreflect.StringKind && !utf8.Valid(payload):
			return name
		case fd.Kind() == protoreflect.MessageKind:
			if p := badUTF8Path(payload, fd.Message(), name+"."); p != "" {
				return p
			}
		}
	}
	return ""
}

// checkDecoded refuses a request the codec marked (see requestCodec).
func checkDecoded(m proto.Message) error {
	for b := m.ProtoReflect().GetUnknown(); len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil
		}
		b = b[n:]
		if num == badUTF8Field && typ == protowire.BytesType {
			path, _ := protowire.ConsumeString(b)
			return invalid(path, "<invalid UTF-8>", "must be valid UTF-8")
		}
		if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			return nil
		}
		b = b[n:]
	}
	return nil
}
