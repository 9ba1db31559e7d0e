/*
 * certlist.node: raises the largest certificate list OpenSSL accepts from a peer, for one
 * SecureContext (src/tls/certlist.ts loads it).
 *
 * OpenSSL refuses a Certificate handshake message above SSL_CTX's max_cert_list (100 KiB by
 * default) with "excessive message size"; the stock albatross-client (2.0-2.7) puts a whole
 * image in the leaf. Node exposes no setter, but a SecureContext's native object answers
 * `_external` with a v8::External holding its SSL_CTX*. Node-API cannot take that value apart
 * (napi_get_value_external expects an External Node-API made itself), so this addon is built
 * against node's C++ headers, and therefore for one Node ABI: node refuses to load it under
 * another. It calls only SSL_CTX_ctrl, resolved at load time from the node binary that loads
 * it (node exports its OpenSSL symbols), and links no libssl: a second OpenSSL in the process
 * would not know node's SSL_CTX.
 */
#include <node.h>
#include <v8.h>

extern "C" long SSL_CTX_ctrl(void *ctx, int cmd, long larg, void *parg);

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
}
