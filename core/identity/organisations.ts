// Organisations and their departments (the admin issue builds the management on top).
import type { Knex } from 'knex';

/** An organisation. */
export interface Organisation {
  id: number;
  name: string;
  slug: string;
}

/** Organisations and departments. */
export class OrganisationRepository {
  constructor(private readonly knex: Knex) {}

  /** Creates an organisation. */
  async create(name: string, slug: string, now: Date): Promise<Organisation> {
    const [row] = await this.knex('organisations').insert({ name, slug, created_at: now }).returning(['id', 'name', 'slug']);
    return row as Organisation;
  }

  /** The organisation with this id. */
  async findById(id: number): Promise<Organisation | undefined> {
    return (await this.knex('organisations').where({ id }).first(['id', 'name', 'slug'])) as Organisation | undefined;
  }

  /** Creates a department in an organisation; returns its id. */
  async createDepartment(organisationId: number, name: string, now: Date): Promise<number> {
    const [row] = await this.knex('departments').insert({ organisation_id: organisationId, name, created_at: now }).returning('id');
    return (row as { id: number }).id;
  }
}
