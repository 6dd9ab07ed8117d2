package server

import (
	"context"
	"log/slog"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	gproto "google.golang.org/protobuf/proto"
)

// A request that cannot be read (bytes that are no valid message, a string
// that is no UTF-8, a message cut short) is the client's error. grpc-go
// answers a codec's failure with Internal, written the moment it happens, so
// no handler or interceptor can change the code afterwards; the codec below
// therefore does not fail for the router's API: it keeps the error in the
// envelope the request was read into, and guardDecoding's handler answers it
// with InvalidArgument.

// envelope carries a request message through the codec, and the error of
// reading it.
type envelope struct {
	msg any
	err error
}

// serverCodec is grpc-go's proto codec, but for an envelope it records the
// error of unmarshalling instead of returning it, and it sends a reply that
// holds a string that is no UTF-8 with that string made valid (Marshal).
type serverCodec struct {
	encoding.CodecV2
	log *slog.Logger
}

func newServerCodec(log *slog.Logger) serverCodec {
	return serverCodec{CodecV2: encoding.GetCodecV2(proto.Name), log: log}
}

// Marshal is grpc-go's, but a message one of whose strings is no UTF-8
// (file and folder names are bytes, whatever a file system holds) is sent
// with U+FFFD for each invalid sequence instead of failing: grpc-go
// answers a codec's failure with Internal, and it would fail every call
// whose reply holds that string, for every client. Each type of message
// that needed it is logged once.
func (c serverCodec) Marshal(v any) (mem.BufferSlice, error) {
	out, err := c.CodecV2.Marshal(v)
	if err == nil {
		return out, nil
	}
	m, ok := v.(gproto.Message)
	if !ok {
		return nil, err
	}
	valid := gproto.Clone(m)
	if !validStrings(valid.ProtoReflect()) {
		return nil, err
	}
	if _, seen := invalidUTF8Logged.LoadOrStore(m.ProtoReflect().Descriptor().FullName(), true); !seen {
		c.log.Warn("a reply held text that is no UTF-8 (a file or folder name?); sent with U+FFFD in its place",
			"message", string(m.ProtoReflect().Descriptor().FullName()))
	}
	return c.CodecV2.Marshal(valid)
}

// invalidUTF8Logged holds the names of the messages serverCodec made
// valid, each logged once.
var invalidUTF8Logged sync.Map

func (c serverCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if e, ok := v.(*envelope); ok {
		e.err = c.CodecV2.Unmarshal(data, e.msg)
		return nil
	}
	return c.CodecV2.Unmarshal(data, v)
}

// guardDecoding returns a copy of desc whose unary methods run authenticate
// (when not nil) before their request is read, so a caller without a valid
// token is refused (and audited) before the server looks at its bytes, and
// answer a request that cannot be read with InvalidArgument. The server
// must use serverCodec.
func guardDecoding(desc *grpc.ServiceDesc, authenticate func(context.Context, string) (context.Context, error)) *grpc.ServiceDesc {
	out := *desc
	out.Methods = make([]grpc.MethodDesc, len(desc.Methods))
	for i, m := range desc.Methods {
		method := "/" + desc.ServiceName + "/" + m.MethodName
		handler := m.Handler
		m.Handler = func(srv any, ctx context.Context, dec func(any) error, in grpc.UnaryServerInterceptor) (any, error) {
			if authenticate != nil {
				var err error
				if ctx, err = authenticate(ctx, method); err != nil {
					return nil, err
				}
			}
			return handler(srv, ctx, func(req any) error {
				e := &envelope{msg: req}
				if err := dec(e); err != nil {
					return err
				}
				if e.err != nil {
					return status.Error(codes.InvalidArgument, "the request is no valid message of "+method+": "+e.err.Error())
				}
				return nil
			}, in)
		}
		out.Methods[i] = m
	}
	return &out
}
