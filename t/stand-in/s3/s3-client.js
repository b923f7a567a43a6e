#!/usr/bin/env node
// s3-client - one SigV4-signed S3 request, signed by npm's aws4 (not by
// decod), for tests that read back, overwrite or delete an object behind
// decod's back.  Usage: node s3-client.js METHOD URL [BODY_FILE]
// Credentials from S3_CLIENT_ACCESS_KEY / S3_CLIENT_SECRET (/ S3_CLIENT_TOKEN),
// region from S3_CLIENT_REGION.  The body goes to stdout byte for byte; the status line
// and headers to stderr.  Exit 0 on 2xx, 1 otherwise (no answer in 10 s: 1).
'use strict';

const http = require('http');
const fs = require('fs');
const aws4 = require('aws4');

const [method, target, file] = process.argv.slice(2);
const u = new URL(target);
const body = file ? fs.readFileSync(file) : Buffer.alloc(0);
const headers = { 'Content-Type': process.env.S3_CLIENT_CONTENT_TYPE || 'text/plain' };
if (!file) delete headers['Content-Type'];
const opts = aws4.sign({ method, host: u.host, path: u.pathname + u.search, service: 's3',
  region: process.env.S3_CLIENT_REGION || 'us-east-1', headers,
  body: file ? body : undefined },
{ accessKeyId: process.env.S3_CLIENT_ACCESS_KEY, secretAccessKey: process.env.S3_CLIENT_SECRET,
  sessionToken: process.env.S3_CLIENT_TOKEN || undefined });
const req = http.request({ host: u.hostname, port: u.port, method, path: opts.path,
  headers: opts.headers }, res => {
  process.stderr.write(`HTTP ${res.statusCode}\n`);
  for (const [k, v] of Object.entries(res.headers)) process.stderr.write(`${k}: ${v}\n`);
  res.on('data', c => process.stdout.write(c));
  res.on('end', () => process.exit(res.statusCode >= 200 && res.statusCode < 300 ? 0 : 1));
});
req.on('error', e => { process.stderr.write(`${e.message}\n`); process.exit(1); });
// a stuck server fails the request instead of hanging the test
req.setTimeout(10000, () => req.destroy(new Error('no answer in 10 s')));
req.end(file ? body : undefined);
