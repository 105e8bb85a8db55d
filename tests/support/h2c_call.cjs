// An HTTP/2 request with prior knowledge (h2c, no upgrade) to a plain
// http:// server, as `curl --http2-prior-knowledge` sends it: prints
// {"status": N, "body": "..."} when answered, or {"error": "..."}.
// Usage: node h2c_call.cjs http://HOST:PORT PATH BODY_JSON [AUTHORITY]
const http2 = require('http2');

const [origin, path, body, authority] = process.argv.slice(2);
const done = (v) => { console.log(JSON.stringify(v)); process.exit(0); };
setTimeout(() => done({ error: 'no answer within 10 s' }), 10000);
const client = http2.connect(origin);
client.on('error', (e) => done({ error: String(e) }));
const headers = { ':method': 'POST', ':path': path, 'content-type': 'application/json' };
if (authority) headers[':authority'] = authority;
const req = client.request(headers);
req.on('error', (e) => done({ error: String(e) }));
let status = 0;
let text = '';
req.on('response', (h) => { status = h[':status']; });
req.setEncoding('utf8');
req.on('data', (d) => { text += d; });
// A stream that ends with no response head: the server closed it.
req.on('end', () => done(status ? { status, body: text } : { error: 'closed without an answer' }));
req.on('close', () => done(status ? { status, body: text } : { error: 'closed without an answer' }));
req.end(body);
