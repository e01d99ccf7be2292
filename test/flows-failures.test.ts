import { expect, it } from 'vitest';
import { describeEachDatabase } from './helpers/harness.js';
import { sendingHelpers } from './helpers/sending.js';

/** A relay that never answers (nothing listens on port 1): every delivery is a temporary failure. */
describeEachDatabase(
  'flows whose steps keep failing',
  (h) => {
    const { api, contact, work } = sendingHelpers(h);
    const knex = () => h().services.db.knex;

    it('an email step retried until its job gives up leaves the enrolment failed and its message unsent', async () => {
      const ws = await h().workspace();
      const who = await contact(ws, 'subscribed');
      const flow = await api(ws, 'POST', '/flows', {
        name: 'Doomed',
        status: 'live',
        trigger: { type: 'event', event_name: 'doom' },
        steps: [{ type: 'email', subject: 'S', html: '<p>x</p>' }],
      });
      const id = flow.json().id;
      await api(ws, 'POST', '/events', { contact_id: who, event_name: 'doom' });
      // Enrol (the outbox is drained), then let the step job have a single attempt.
      await h().services.dispatcher.drain();
      expect(await knex()('jobs').where({ kind: 'flow.step' }).update({ max_attempts: 1 })).toBe(1);
      await work();
      const [enrolment] = (await api(ws, 'GET', `/flows/${id}/enrollments`)).json().data;
      expect(enrolment).toMatchObject({ status: 'failed', current_step: 0 });
      const [job] = await knex()('jobs').where({ kind: 'flow.step' });
      expect(job.failed_at).not.toBeNull();
      expect(job.last_error).toMatch(/temporary delivery failure/);
      const [message] = (await api(ws, 'GET', `/messages?flow_id=${id}`)).json().data;
      expect(message.status).toBe('sending');
    });
  },
  { EMK_SMTP_URL: 'smtp://127.0.0.1:1' },
);
