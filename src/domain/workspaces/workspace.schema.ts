import { z } from 'zod';
import { text } from '../shared/validate.js';

export const createWorkspaceSchema = z.object({
  name: text(200),
  domain: text(255),
});
export type CreateWorkspaceInput = z.infer<typeof createWorkspaceSchema>;

export interface Workspace {
  id: string;
  name: string;
  site_id: string;
  click_window_days: number;
  open_window_days: number;
  contact_limit: number | null;
  created_at: string;
}
