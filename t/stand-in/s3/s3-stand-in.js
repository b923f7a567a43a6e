#!/usr/bin/env node
// s3-stand-in - an S3 server for decod's tests that really checks SigV4.
// npm's s3rver stores the objects but accepts any secret, so every request
// first goes through a verifier that recomputes its signature with npm's
// aws4 (an implementation independent of decod's) and refuses a mismatch
// the way S3 does (403 and S3's error XML, e.g. SignatureDoesNotMatch);
// only verified requests reach s3rver, on a loopback port of its own.
//
// Usage: node s3-stand-in.js --port P --dir DIR --bucket B --region R
//            --access-key AK [--ready FILE]
// The secret comes from S3_STAND_IN_SECRET (and an expected session token
// from S3_STAND_IN_TOKEN), never from argv.  Control (not S3):
//   POST /__stand-in/fault?status=500&count=N  next N S3 requests fail so
//   GET  /__stand-in/stats                     {"PUT":n,"HEAD":n,...,"refused":n}
// Each S3 request is logged to stdout as "METHOD PATH STATUS [CODE]".
'use strict';

const http = require('http');
const crypto = require('crypto');
const fs = require('fs');
const aws4 = require('aws4');
const S3rver = require('s3rver');

function args() {
  const a = {};
  const v = process.argv.slice(2);
  for (let i = 0; i < v.length; i += 2) a[v[i].replace(/^--/, '')] = v[i + 1];
  for (const k of ['port', 'dir', 'bucket', 'region', 'access-key'])
    if (!a[k]) { console.error(`missing --${k}`); process.exit(2); }
  return a;
}

const opt = args();
const SECRET = process.env.S3_STAND_IN_SECRET || '';
const TOKEN = process.env.S3_STAND_IN_TOKEN || '';
const stats = { PUT: 0, HEAD: 0, GET: 0, DELETE: 0, POST: 0, refused: 0, faults: 0 };
let fault = { status: 0, count: 0 };

function xmlEscape(s) {
  return String(s).replace(/[<>&'"]/g, c => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;',
    "'": '&apos;', '"': '&quot;' }[c]));
}

function refuse(req, res, status, code, message, extra) {
  stats.refused++;
  let body = '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>' + code +
    '</Code><Message>' + xmlEscape(message) + '</Message>';
  for (const [k, v] of Object.entries(extra || {}))
    body += `<${k}>${xmlEscape(v)}</${k}>`;
  body += '<RequestId>' + crypto.randomBytes(8).toString('hex').toUpperCase() +
    '</RequestId></Error>';
  res.writeHead(status, { 'Content-Type': 'application/xml',
    'Content-Length': req.method === 'HEAD' ? 0 : Buffer.byteLength(body) });
  res.end(req.method === 'HEAD' ? undefined : body);
  console.log(`${req.method} ${req.url} ${status} ${code}`);
}

// verify - null when the request is signed right, else [status, code, message]
function verify(req, body) {
  const auth = req.headers.authorization;
  if (!auth) return [403, 'AccessDenied', 'Access Denied'];
  const m = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$/.exec(auth);
  if (!m) return [400, 'AuthorizationHeaderMalformed', 'The authorization header is malformed.'];
  const [, ak, date8, region, service, signedHeaders, signature] = m;
  if (ak !== opt['access-key'])
    return [403, 'InvalidAccessKeyId', 'The AWS Access Key Id you provided does not exist in our records.'];
  if (region !== opt.region)
    return [400, 'AuthorizationHeaderMalformed', `The authorization header is malformed; the region '${region}' is wrong; expecting '${opt.region}'`];
  if (service !== 's3')
    return [400, 'AuthorizationHeaderMalformed', `The authorization header is malformed; incorrect service "${service}". This endpoint belongs to "s3".`];
  const names = signedHeaders.split(';');
  for (const need of ['host', 'x-amz-date', 'x-amz-content-sha256'])
    if (!names.includes(need))
      return [400, 'InvalidRequest', `Missing required header for this request: ${need}`];
  const amzDate = req.headers['x-amz-date'] || '';
  const t = Date.parse(amzDate.replace(/^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/, '$1-$2-$3T$4:$5:$6Z'));
  if (isNaN(t) || amzDate.slice(0, 8) !== date8)
    return [403, 'AccessDenied', 'AWS authentication requires a valid Date or x-amz-date header'];
  if (Math.abs(Date.now() - t) > 15 * 60 * 1000)
    return [403, 'RequestTimeTooSkewed', 'The difference between the request time and the current time is too large.'];
  const declared = req.headers['x-amz-content-sha256'];
  const actual = crypto.createHash('sha256').update(body).digest('hex');
  if (declared !== 'UNSIGNED-PAYLOAD' && declared !== actual)
    return [400, 'XAmzContentSHA256Mismatch', "The provided 'x-amz-content-sha256' header does not match what was computed."];
  if (TOKEN && req.headers['x-amz-security-token'] !== TOKEN)
    return [403, 'InvalidToken', 'The provided token is malformed or otherwise invalid.'];
  const headers = {};
  for (const n of names) {
    if (req.headers[n] === undefined)
      return [403, 'SignatureDoesNotMatch', `Signed header ${n} is missing`];
    headers[n] = req.headers[n];
  }
  const signed = aws4.sign({ method: req.method, host: req.headers.host, path: req.url,
    service: 's3', region: opt.region, headers },
  { accessKeyId: ak, secretAccessKey: SECRET, sessionToken: TOKEN || undefined });
  const want = /Signature=([0-9a-f]{64})/.exec(signed.headers.Authorization)[1];
  const wantSigned = /SignedHeaders=([^,]+)/.exec(signed.headers.Authorization)[1];
  if (want !== signature || wantSigned !== signedHeaders)
    return [403, 'SignatureDoesNotMatch', 'The request signature we calculated does not match the signature you provided. Check your key and signing method.'];
  return null;
}

function control(req, res, url) {
  if (url.pathname === '/__stand-in/fault' && req.method === 'POST') {
    fault = { status: parseInt(url.searchParams.get('status') || '500', 10),
      count: parseInt(url.searchParams.get('count') || '1', 10) };
    res.end('ok\n');
  } else if (url.pathname === '/__stand-in/stats') {
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify(stats) + '\n');
  } else {
    res.statusCode = 404;
    res.end();
  }
}

async function main() {
  fs.mkdirSync(opt.dir, { recursive: true });
  const inner = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: opt.dir,
    configureBuckets: [{ name: opt.bucket }] });
  const addr = await inner.run();

  const proxy = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    if (url.pathname.startsWith('/__stand-in/')) return control(req, res, url);
    const chunks = [];
    // a client that goes away mid-request (a stage killed, a timeout) is
    // what S3 sees all day: drop that exchange, keep serving the others
    req.on('error', e => console.log(`${req.method} ${req.url} client error ${e.code || e.message}`));
    res.on('error', e => console.log(`${req.method} ${req.url} client error ${e.code || e.message}`));
    req.on('data', c => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if (stats[req.method] !== undefined) stats[req.method]++;
      const bad = verify(req, body);
      if (bad) return refuse(req, res, bad[0], bad[1], bad[2]);
      if (fault.count > 0) {
        fault.count--;
        stats.faults++;
        stats.refused--;	// a fault is not a refused signature
        return refuse(req, res, fault.status, fault.status === 503 ? 'SlowDown' :
          'InternalError', fault.status === 503 ? 'Please reduce your request rate.' :
          'We encountered an internal error. Please try again.');
      }
      const headers = Object.assign({}, req.headers);
      delete headers.authorization;	// s3rver: anonymous, already verified here
      const up = http.request({ host: addr.address, port: addr.port, method: req.method,
        path: req.url, headers }, ures => {
        ures.on('error', e => { console.log(`${req.method} ${req.url} upstream error ${e.message}`); res.destroy(); });
        res.writeHead(ures.statusCode, ures.headers);
        ures.pipe(res);
        console.log(`${req.method} ${req.url} ${ures.statusCode}`);
      });
      up.on('error', e => {
        if (res.headersSent) res.destroy();	// cut mid-answer: the client sees it cut
        else refuse(req, res, 500, 'InternalError', e.message);
      });
      up.end(body);
    });
  });
  proxy.keepAliveTimeout = 60000;
  proxy.listen(parseInt(opt.port, 10), '127.0.0.1', () => {
    if (opt.ready) fs.writeFileSync(opt.ready, `${opt.port}\n`);
    console.log(`ready port=${opt.port} s3rver=${addr.port}`);
  });
  const stop = () => { proxy.close(); inner.close().finally(() => process.exit(0)); };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

// anything else is a bug in this stand-in: say so where the test prints it
process.on('uncaughtException', e => { console.log(`stand-in crashed: ${e.stack}`); process.exit(70); });
main().catch(e => { console.error(e); process.exit(1); });
