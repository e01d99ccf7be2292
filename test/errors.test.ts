import { expect, it } from 'vitest';
import { describeEachDatabase } from './helpers/harness.js';

describeEachDatabase('probe', (h) => {
  it('probe', async () => {
    const ws = await h().workspace();
    const show = async (label: string, p: Promise<any>) => {
      const r = await p;
      console.log(h().dialect, label, r.statusCode, r.headers['content-type'], JSON.stringify(r.headers['x-request-id']), r.headers['access-control-allow-origin'], r.body.slice(0, 200));
    };
    await show('long param', h().request({ method: 'GET', url: '/api/v1/contacts/' + 'x'.repeat(150), key: ws.apiKey }));
    await show('long param del', h().request({ method: 'DELETE', url: '/api/v1/api-keys/' + 'x'.repeat(150), key: ws.apiKey }));
    await show('long cid', h().request({ method: 'POST', url: '/collect/event', json: { site_id: ws.siteId, event_name: 'x', contact_id: 'x'.repeat(60) } }));
    await show('long cid q', h().request({ method: 'GET', url: '/api/v1/events?contact_id=' + 'x'.repeat(60), key: ws.apiKey }));
    await show('emoji name', h().request({ method: 'POST', url: '/collect/event', json: { site_id: ws.siteId, event_name: '🎉'.repeat(127), email: 'e@x.io' } }));
    await show('emoji name 128', h().request({ method: 'POST', url: '/collect/event', json: { site_id: ws.siteId, event_name: '🎉'.repeat(128), email: 'e@x.io' } }));
    await show('long email', h().request({ method: 'POST', url: '/collect/identify', json: { site_id: ws.siteId, email: 'a'.repeat(310) + '@example.com' } }));
    await show('long site', h().request({ method: 'POST', url: '/collect/identify', json: { site_id: 's'.repeat(100), email: 'a@example.com' } }));
    await show('lone surrogate', h().request({ method: 'POST', url: '/collect/event', payload: `{"site_id":"${ws.siteId}","event_name":"x\\ud800","email":"a@b.c"}`, headers: { 'content-type': 'application/json' } }));
    await show('nul key', h().request({ method: 'POST', url: '/collect/event', payload: `{"site_id":"${ws.siteId}","event_name":"x","email":"a@b.c","properties":{"a\\u0000":1}}`, headers: { 'content-type': 'application/json' } }));
    await show('raw nul', h().request({ method: 'POST', url: '/collect/event', payload: `{"site_id":"${ws.siteId}","event_name":"x\u0000","email":"a@b.c"}`, headers: { 'content-type': 'application/json' } }));
    await show('ws key', h().request({ method: 'GET', url: '/api/v1/events', key: 'emk_wrong' }));
    await show('empty key', h().request({ method: 'GET', url: '/api/v1/events', headers: {'x-api-key': ''} }));
    await show('put collect', h().request({ method: 'PUT', url: '/collect/event', json: {} }));
    await show('get collect', h().request({ method: 'GET', url: '/collect/event' }));
    await show('json charset', h().request({ method: 'POST', url: '/collect/identify', payload: JSON.stringify({ site_id: ws.siteId, email: 'cs@x.io' }), headers: { 'content-type': 'application/json; charset=utf-8' } }));
    await show('text/plain', h().request({ method: 'POST', url: '/collect/identify', payload: JSON.stringify({ site_id: ws.siteId, email: 'tp@x.io' }), headers: { 'content-type': 'text/plain;charset=UTF-8' } }));
    await show('APPLICATION/JSON', h().request({ method: 'POST', url: '/collect/identify', payload: JSON.stringify({ site_id: ws.siteId, email: 'up@x.io' }), headers: { 'content-type': 'Application/JSON' } }));
    await show('vnd json', h().request({ method: 'POST', url: '/collect/identify', payload: JSON.stringify({ site_id: ws.siteId, email: 'up@x.io' }), headers: { 'content-type': 'application/vnd.api+json' } }));
    await show('bom', h().request({ method: 'POST', url: '/collect/identify', payload: '\ufeff' + JSON.stringify({ site_id: ws.siteId, email: 'bom@x.io' }), headers: { 'content-type': 'application/json' } }));
    await show('options identify w/ headers', h().request({ method: 'OPTIONS', url: '/collect/identify', headers: { origin: 'https://shop.test', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,x-foo' } }));
    await show('options mgmt', h().request({ method: 'OPTIONS', url: '/api/v1/events', headers: { origin: 'https://shop.test', 'access-control-request-method': 'POST' } }));
  });
});
