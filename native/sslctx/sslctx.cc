/*
 * sslctx.node: what the TLS endpoint sets on a SecureContext's SSL_CTX that Node does not
 * expose: the largest certificate list accepted from a peer, no chain verification by OpenSSL,
 * no TLS 1.3 session tickets (src/tls/sslctx.ts says why each).
 *
 * OpenSSL refuses a Certificate handshake message above SSL_CTX's max_cert_list (100 KiB by
 * default) with "excessive message size"; the stock albatross-client (2.0-2.7) puts a whole
 * image in the leaf. Node exposes no setter, but a SecureContext's native object answers
 * `_external` with a v8::External holding its SSL_CTX*. Node-API cannot take that value apart
 * (napi_get_value_external expects an External Node-API made itself), so this addon is built
 * against node's C++ headers, and therefore for one Node ABI: node refuses to load it under
 * another. It calls only SSL_CTX_ctrl, SSL_CTX_set_cert_verify_callback and
 * SSL_CTX_set_num_tickets, resolved at load time from the node binary that loads it (node
 * exports its OpenSSL symbols), and links no libssl: a second OpenSSL in the process would not
 * know node's SSL_CTX.
 */
#include <node.h>
#include <v8.h>

extern "C" long SSL_CTX_ctrl(void *ctx, int cmd, long larg, void *parg);
extern "C" int SSL_CTX_set_num_tickets(void *ctx, size_t num_tickets);
extern "C" size_t SSL_CTX_get_num_tickets(const void *ctx);
extern "C" void SSL_CTX_set_cert_verify_callback(void *ctx, int (*cb)(void *store_ctx, void *arg),
                                                 void *arg);

/* openssl/ssl.h's values; stable across OpenSSL 1.0 to 3.x. */
static const int CTRL_GET_MAX_CERT_LIST = 50;
static const int CTRL_SET_MAX_CERT_LIST = 51;

static void fail(v8::Isolate *isolate, const char *message)
{
    isolate->ThrowException(v8::Exception::TypeError(
        v8::String::NewFromUtf8(isolate, message).ToLocalChecked()));
}

/* setMaxCertList(external, bytes): the limit now in force (read back from the context). */
static void SetMaxCertList(const v8::FunctionCallbackInfo<v8::Value> &args)
{
    v8::Isolate *isolate = args.GetIsolate();
    if (args.Length() != 2 || !args[0]->IsExternal() || !args[1]->IsUint32()) {
        fail(isolate, "setMaxCertList(external, bytes): a SecureContext's _external and a byte count");
        return;
    }
    void *ctx = args[0].As<v8::External>()->Value();
    if (ctx == nullptr) {
        fail(isolate, "setMaxCertList: the SecureContext holds no SSL_CTX");
        return;
    }
    long bytes = static_cast<long>(args[1].As<v8::Uint32>()->Value());
    SSL_CTX_ctrl(ctx, CTRL_SET_MAX_CERT_LIST, bytes, nullptr);
    long now = SSL_CTX_ctrl(ctx, CTRL_GET_MAX_CERT_LIST, 0, nullptr);
    args.GetReturnValue().Set(v8::Number::New(isolate, static_cast<double>(now)));
}

/* The chain is Petrel's to judge (src/tls/chain.ts): OpenSSL's verdict is never read. */
static int accept_chain(void *store_ctx, void *arg)
{
    (void)store_ctx;
    (void)arg;
    return 1;
}

/*
 * skipChainVerification(external): OpenSSL no longer builds and verifies the client's chain.
 * Node requests a client certificate with a callback that accepts any verdict, so that work was
 * thrown away, and it costs: a copy of each certificate's signed part per signature checked (a
 * leaf may be an image) and a chain search per session. The client's CertificateVerify (proof
 * of the leaf's key) is checked by TLS itself, as before.
 */
static void SkipChainVerification(const v8::FunctionCallbackInfo<v8::Value> &args)
{
    v8::Isolate *isolate = args.GetIsolate();
    if (args.Length() != 1 || !args[0]->IsExternal()) {
        fail(isolate, "skipChainVerification(external): a SecureContext's _external");
        return;
    }
    void *ctx = args[0].As<v8::External>()->Value();
    if (ctx == nullptr) {
        fail(isolate, "skipChainVerification: the SecureContext holds no SSL_CTX");
        return;
    }
    SSL_CTX_set_cert_verify_callback(ctx, accept_chain, nullptr);
}

/*
 * noTickets(external): no TLS 1.3 session tickets; returns how many are sent now (0). SSL_OP_NO_TICKET only makes them stateful,
 * so OpenSSL still made and sent two per session (each a new session), which no later
 * connection can use (Node keeps no server session cache here, and the endpoint wants every
 * chain presented afresh), and it held the client's Certificate message until they were out.
 */
static void NoTickets(const v8::FunctionCallbackInfo<v8::Value> &args)
{
    v8::Isolate *isolate = args.GetIsolate();
    if (args.Length() != 1 || !args[0]->IsExternal() || args[0].As<v8::External>()->Value() == nullptr) {
        fail(isolate, "noTickets(external): a SecureContext's _external");
        return;
    }
    void *ctx = args[0].As<v8::External>()->Value();
    if (SSL_CTX_set_num_tickets(ctx, 0) != 1) {
        fail(isolate, "noTickets: SSL_CTX_set_num_tickets refused");
        return;
    }
    args.GetReturnValue().Set(v8::Number::New(isolate, static_cast<double>(SSL_CTX_get_num_tickets(ctx))));
}

NODE_MODULE_INIT()
{
    (void)module;
    v8::Isolate *isolate = context->GetIsolate();
    v8::Local<v8::Function> fn = v8::FunctionTemplate::New(isolate, SetMaxCertList)
                                     ->GetFunction(context)
                                     .ToLocalChecked();
    exports.As<v8::Object>()
        ->Set(context, v8::String::NewFromUtf8Literal(isolate, "setMaxCertList"), fn)
        .Check();
    v8::Local<v8::Function> skip = v8::FunctionTemplate::New(isolate, SkipChainVerification)
                                       ->GetFunction(context)
                                       .ToLocalChecked();
    exports.As<v8::Object>()
        ->Set(context, v8::String::NewFromUtf8Literal(isolate, "skipChainVerification"), skip)
        .Check();
    v8::Local<v8::Function> tickets =
        v8::FunctionTemplate::New(isolate, NoTickets)->GetFunction(context).ToLocalChecked();
    exports.As<v8::Object>()
        ->Set(context, v8::String::NewFromUtf8Literal(isolate, "noTickets"), tickets)
        .Check();
}
