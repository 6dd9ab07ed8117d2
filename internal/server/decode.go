package server

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
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

// requestCodec is grpc-go's proto codec, but for an envelope it records the
// error of unmarshalling instead of returning it.
type requestCodec struct{ encoding.CodecV2 }

func newRequestCodec() requestCodec {
	return requestCodec{encoding.GetCodecV2(proto.Name)}
}

func (c requestCodec) Unmarshal(data mem.BufferSlice, v any) error {
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
// must use requestCodec.
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
