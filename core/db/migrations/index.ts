import type { Knex } from 'knex';
import * as m001 from './001_api_keys.js';
import * as m002 from './002_audit_log.js';
import * as m003 from './003_wallets.js';
import * as m004 from './004_key_managed_by.js';
import * as m005 from './005_region_policies.js';
import * as m006 from './006_identity.js';
import * as m007 from './007_wallet_nano.js';
import * as m008 from './008_key_ownership.js';
import * as m009 from './009_audit_attempts_snake_case.js';
import * as m010 from './010_portal_activity.js';
import * as m011 from './011_billing.js';
import * as m012 from './012_usage_rollups.js';
import * as m013 from './013_billing_disputes.js';
import * as m014 from './014_user_display_settings.js';
import * as m015 from './015_portal_settings.js';
import * as m016 from './016_get_started.js';
import * as m017 from './017_autorouter.js';
import * as m018 from './018_help_panels.js';
import * as m019 from './019_user_deletion.js';
import * as m020 from './020_promotions.js';
import * as m021 from './021_catalogue.js';
import * as m022 from './022_user_billing_admin.js';
import * as m023 from './023_user_monthly_budget.js';
import * as m024 from './024_projects.js';
import * as m025 from './025_credential_pools.js';
import * as m026 from './026_reports.js';
import * as m027 from './027_schedules_budgets.js';
import * as m028 from './028_export_chunks.js';
import * as m029 from './029_key_budget_nano.js';
import * as m030 from './030_unverified_identity_links.js';
import * as m031 from './031_auto_topup_consent.js';
import * as m032 from './032_audit_cache_writes.js';
import * as m033 from './033_identity_refusals.js';
import * as m034 from './034_budget_period_since.js';
import * as m035 from './035_project_tokens_of_leavers.js';
import * as m036 from './036_team_tokens_of_leavers.js';
import * as m037 from './037_schedule_run_recipients.js';
import * as m038 from './038_billing_operation_charge.js';
import * as m039 from './039_billing_install_metadata.js';
import * as m040 from './040_billing_refund_failures.js';
import * as m041 from './041_store_binding.js';
import * as m042 from './042_managed_key_names.js';

/** A migration module: forward and backward steps. */
interface Migration {
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
}

/**
 * Migrations listed explicitly (not discovered from the file system) so they work the same
 * under tsx, compiled JavaScript and bundles. Append new ones; never rename or reorder.
 */
const migrations: ReadonlyArray<readonly [string, Migration]> = [
  ['001_api_keys', m001],
  ['002_audit_log', m002],
  ['003_wallets', m003],
  ['004_key_managed_by', m004],
  ['005_region_policies', m005],
  ['006_identity', m006],
  ['007_wallet_nano', m007],
  ['008_key_ownership', m008],
  ['009_audit_attempts_snake_case', m009],
  ['010_portal_activity', m010],
  ['011_billing', m011],
  ['012_usage_rollups', m012],
  ['013_billing_disputes', m013],
  ['014_user_display_settings', m014],
  ['015_portal_settings', m015],
  ['016_get_started', m016],
  ['017_autorouter', m017],
  ['018_help_panels', m018],
  ['019_user_deletion', m019],
  ['020_promotions', m020],
  ['021_catalogue', m021],
  ['022_user_billing_admin', m022],
  ['023_user_monthly_budget', m023],
  ['024_projects', m024],
  ['025_credential_pools', m025],
  ['026_reports', m026],
  ['027_schedules_budgets', m027],
  ['028_export_chunks', m028],
  ['029_key_budget_nano', m029],
  ['030_unverified_identity_links', m030],
  ['031_auto_topup_consent', m031],
  ['032_audit_cache_writes', m032],
  ['033_identity_refusals', m033],
  ['034_budget_period_since', m034],
  ['035_project_tokens_of_leavers', m035],
  ['036_team_tokens_of_leavers', m036],
  ['037_schedule_run_recipients', m037],
  ['038_billing_operation_charge', m038],
  ['039_billing_install_metadata', m039],
  ['040_billing_refund_failures', m040],
  ['041_store_binding', m041],
  ['042_managed_key_names', m042],
];

/** knex migration source over the explicit list above. */
export const migrationSource: Knex.MigrationSource<readonly [string, Migration]> = {
  getMigrations: async () => [...migrations],
  getMigrationName: (migration) => migration[0],
  getMigration: async (migration) => migration[1],
};
