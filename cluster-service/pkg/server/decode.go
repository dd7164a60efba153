package server

import (
	"context"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	protocodec "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// A request whose bytes do not decode (a string field holding invalid UTF-8, a truncated or
// malformed message) is the caller's error: InvalidArgument, counted and logged as one. So is
// one that decodes but holds a NUL in a string (nulStrings), checked at the same place.
//
// grpc-go decodes a unary request in the generated method handler, before any interceptor
// runs, and a stream's request in RecvMsg; either way it turns the codec's error into a new
// Internal status of its own, so neither an interceptor nor a codec returning a status can
// change the code. Instead:
//
//   - Register registers every service with its method and stream handlers wrapped
//     (decodes.service): each message they decode is first armed (a per-call entry, keyed by
//     the message pointer and deleted when that decode returns, whatever happens);
//   - the server's codec (ServerOptions, decodes.codec) decodes as grpc's protobuf codec does;
//     for an armed message that does not decode it resets the message, records the error
//     against it and returns nil, so grpc carries on;
//   - the wrapped handler then answers InvalidArgument in place of the service's handler: for
//     a unary call from the innermost position of the interceptor chain (after the logging and
//     metrics interceptors and after authz, so a caller authz refuses is told PermissionDenied
//     whatever bytes it sent), for a stream from RecvMsg.
//
// No message that failed to decode reaches a handler: the codec returns nil only for a message
// a wrapped handler armed, and that handler always checks. With the codec alone (services
// registered elsewhere, the health service) or the wrappers alone (a server without
// ServerOptions) nothing is armed or nothing is recorded, and grpc answers Internal as before.
// Memory is bounded by the decodes in progress.
type decodeFailures struct {
	armed sync.Map // proto.Message → *decodeResult, while its decode runs
}

type decodeResult struct{ err error }

// decode runs dec(m) (grpc's decoder of a unary request, or a stream's RecvMsg) with m armed.
// It returns the InvalidArgument answer if m's bytes did not decode (m is then reset), or dec's
// own error (transport, size, compression), which is grpc's answer.
func (f *decodeFailures) decode(m any, dec func(any) error) (refusal, err error) {
	pm, ok := m.(proto.Message)
	if !ok {
		return nil, dec(m)
	}
	r := &decodeResult{}
	f.armed.Store(pm, r)
	defer f.armed.Delete(pm)
	if err := dec(m); err != nil {
		return nil, err
	}
	if r.err != nil {
		return status.Errorf(codes.InvalidArgument, "request could not be decoded: %v", r.err), nil
	}
	return nil, nil
}

// codec is the server's codec: grpc's protobuf codec, recording a decode error of an armed
// message instead of returning it.
func (f *decodeFailures) codec() encoding.CodecV2 {
	return armedCodec{CodecV2: encoding.GetCodecV2(protocodec.Name), f: f}
}

type armedCodec struct {
	encoding.CodecV2
	f *decodeFailures
}

func (c armedCodec) Unmarshal(data mem.BufferSlice, v any) error {
	pm, ok := v.(proto.Message)
	if !ok {
		return c.CodecV2.Unmarshal(data, v)
	}
	r, armed := c.f.armed.Load(pm)
	if !armed {
		return c.CodecV2.Unmarshal(data, v)
	}
	if err := c.CodecV2.Unmarshal(data, v); err != nil {
		proto.Reset(pm) // nothing half-decoded stays in it
		r.(*decodeResult).err = err
	}
	return nil
}

// registrar registers services on g with their handlers wrapped by service.
type registrar struct {
	g grpc.ServiceRegistrar
	f *decodeFailures
}

func (r registrar) RegisterService(desc *grpc.ServiceDesc, impl any) {
	r.g.RegisterService(r.f.service(desc), impl)
}

// service is desc with every method and stream handler answering InvalidArgument for a
// request that does not decode.
func (f *decodeFailures) service(desc *grpc.ServiceDesc) *grpc.ServiceDesc {
	d := *desc
	d.Methods = make([]grpc.MethodDesc, len(desc.Methods))
	for i, m := range desc.Methods {
		d.Methods[i] = grpc.MethodDesc{MethodName: m.MethodName, Handler: f.unary(m.Handler)}
	}
	d.Streams = make([]grpc.StreamDesc, len(desc.Streams))
	for i, s := range desc.Streams {
		s.Handler = f.stream(s.Handler)
		d.Streams[i] = s
	}
	return &d
}

// unary wraps a generated method handler: it decodes with the message armed and, if the bytes
// did not decode, the handler at the end of the interceptor chain answers the refusal instead
// of the service.
func (f *decodeFailures) unary(h grpc.MethodHandler) grpc.MethodHandler {
	return func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
		var refusal error
		armedDec := func(m any) error {
			var err error
			refusal, err = f.decode(m, dec)
			return err
		}
		last := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			service := func(ctx context.Context, req any) (any, error) {
				if refusal != nil {
					return nil, refusal
				}
				if err := nulStrings(req); err != nil {
					return nil, err
				}
				return handler(ctx, req)
			}
			if interceptor == nil {
				return service(ctx, req)
			}
			return interceptor(ctx, req, info, service)
		}
		return h(srv, ctx, armedDec, last)
	}
}

// stream wraps a generated stream handler: its stream's RecvMsg answers the refusal for a
// message that did not decode.
func (f *decodeFailures) stream(h grpc.StreamHandler) grpc.StreamHandler {
	return func(srv any, ss grpc.ServerStream) error {
		return h(srv, &decodingStream{ServerStream: ss, f: f})
	}
}

type decodingStream struct {
	grpc.ServerStream
	f *decodeFailures
}

func (s *decodingStream) RecvMsg(m any) error {
	refusal, err := s.f.decode(m, s.ServerStream.RecvMsg)
	if err != nil {
		return err
	}
	if refusal != nil {
		return refusal
	}
	return nulStrings(m)
}
