/**
 * The suppression list as a condition on a contact row (`alias` names it): its address is not on its
 * workspace's list. For audiences chosen in SQL; one address at a time goes through the service.
 */
export const notSuppressedSql = (alias: string) =>
  `NOT EXISTS (SELECT 1 FROM suppressions s WHERE s.workspace_id = ${alias}.workspace_id AND s.email_key = ${alias}.email_key)`;
