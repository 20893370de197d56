// Account actions as plain functions of plain input: no req/res here, so tests and jobs can call
// them. Every refusal is a catalogue ApiError; the routes decide between JSON and a page.
import { ApiError } from '../../../../core/errors/index.js';
import {
  EmailTakenError,
  hashPassword,
  passwordWeakness,
  tokenLifetimeMs,
  verifyPassword,
  type OneTimeTokens,
  type SessionRepository,
  type User,
  type UserRepository,
} from '../../../../core/identity/index.js';
import { actionMessage, type Mailer } from '../../mail/mailer.js';
import type { LoginThrottle } from './throttle.js';

/** What the account service works with. */
export interface AccountDeps {
  users: UserRepository;
  tokens: OneTimeTokens;
  sessions: SessionRepository;
  mailer: Mailer;
  throttle: LoginThrottle;
  baseUrl: string;
  ownerEmail: string | undefined;
  legalVersion: string;
  clock: () => number;
}

/** Where an account in a state other than active is sent. */
export const accountStatusPage = { suspended: '/account/suspended', archived: '/account/archived' } as const;

/** Registration, sign-in, verification and password reset. */
export class AccountService {
  constructor(private readonly deps: AccountDeps) {}

  private now(): Date {
    return new Date(this.deps.clock());
  }

  /**
   * Creates an account and sends its verification email. `acceptTerms` false → tos_not_accepted.
   * `returnTo` (a safe portal path: where the sign-up began, an invitation) rides on the link.
   */
  async register(input: {
    email: string;
    password: string;
    name: string;
    acceptTerms: boolean | undefined;
    returnTo?: string;
  }): Promise<User> {
    if (input.acceptTerms === false) throw new ApiError('tos_not_accepted', { param: 'accept_terms' });
    const weakness = passwordWeakness(input.password, input.email);
    if (weakness) throw new ApiError('weak_password', { humanMessage: weakness, param: 'password' });
    let user: User;
    try {
      user = await this.deps.users.create(
        {
          email: input.email,
          displayName: input.name,
          passwordHash: await hashPassword(input.password),
          legalVersion: input.acceptTerms ? this.deps.legalVersion : null,
        },
        this.now(),
      );
    } catch (error) {
      if (error instanceof EmailTakenError) throw new ApiError('email_taken', { param: 'email' });
      throw error;
    }
    await this.sendVerification(user, input.returnTo);
    return user;
  }

  /**
   * Mails the verification link. `returnTo` goes in it: the link is opened from the mailbox, away
   * from the tab where the sign-up began, and the verified page's sign-in leads back there (an
   * invitation was otherwise lost, and the first sign-in landed on the dashboard).
   */
  private async sendVerification(user: User, returnTo: string | undefined): Promise<void> {
    const now = this.now();
    // Only the newest link works, as for password resets: a resend voids the ones before.
    await this.deps.tokens.revokeUnused('verify_email', user.id, now);
    const token = await this.deps.tokens.mint('verify_email', user.id, now);
    // After the answer: the account is made whatever the mail server does (a resend mails again).
    this.deps.mailer.sendLater(
      actionMessage(
        user.email,
        'Verify your email address',
        `Hello ${user.displayName}, please confirm that this is your email address to finish creating your account.`,
        'Verify my email address',
        `${this.deps.baseUrl}/verify-email?token=${token}${returnTo ? `&return_to=${encodeURIComponent(returnTo)}` : ''}`,
        `The link works once and expires in ${tokenLifetimeMs.verify_email / 3_600_000} hours. If you did not sign up, ignore this message.`,
      ),
      'verification email',
    );
  }

  /** Checks a password sign-in; the answer never says whether an unknown address exists. */
  async signIn(input: { email: string; password: string; address: string }): Promise<User> {
    // Every attempt is counted before its password is checked; a right password un-counts it.
    await this.deps.throttle.begin(input.email, input.address);
    const found = await this.deps.users.findForSignIn(input.email);
    if (found && !found.user.hasPassword) throw new ApiError('sso_only');
    const ok = await verifyPassword(found?.passwordHash ?? null, input.password);
    if (!found || !ok) throw new ApiError('invalid_credentials');
    await this.deps.throttle.succeeded(input.email, input.address);
    const { user } = found;
    if (user.status !== 'active') {
      throw new ApiError('account_status', {
        humanMessage: user.status === 'suspended' ? 'This account is suspended' : 'This account is archived',
        details: { status: user.status, redirect: accountStatusPage[user.status] },
      });
    }
    if (!user.emailVerified) throw new ApiError('email_not_verified');
    return user;
  }

  /** Uses a verification link; the owner address becomes owner here. */
  async verifyEmail(token: string): Promise<User> {
    const used = await this.deps.tokens.consume('verify_email', token, this.now());
    // Nothing is said of the account behind a link that no longer works (it may have been claimed
    // since, by its owner through single sign-on): the page offers both ways on.
    if (!used?.userId)
      throw new ApiError('invalid_token', {
        humanMessage:
          'This verification link no longer works: it was used already, replaced by a newer one, or expired. If your address is verified, sign in; if not, send yourself a new link',
      });
    return this.deps.users.markEmailVerified(used.userId, this.now(), this.deps.ownerEmail);
  }

  /** Sends a new verification link if the address has an unverified account; silent otherwise. */
  async resendVerification(email: string, returnTo?: string): Promise<void> {
    const user = await this.deps.users.findByEmail(email);
    if (user && !user.emailVerified && user.status === 'active') await this.sendVerification(user, returnTo);
  }

  /** Sends a reset link if the address has an active account; silent otherwise (same answer). */
  async forgotPassword(email: string): Promise<void> {
    const user = await this.deps.users.findByEmail(email);
    if (!user || user.status !== 'active') return;
    const now = this.now();
    await this.deps.tokens.revokeUnused('reset_password', user.id, now);
    const token = await this.deps.tokens.mint('reset_password', user.id, now);
    await this.deps.mailer.send(
      actionMessage(
        user.email,
        'Reset your password',
        `Hello ${user.displayName}, someone (hopefully you) asked to reset the password of your account.`,
        'Choose a new password',
        `${this.deps.baseUrl}/reset-password?token=${token}`,
        `The link works once and expires in ${tokenLifetimeMs.reset_password / 60_000} minutes. If you did not ask, ignore this message: your password stays unchanged.`,
      ),
    );
  }

  /**
   * Changes a signed-in user's password: the current one is checked first (counted like a sign-in,
   * so a session left open is no way to guess it), every other session of the account ends, and
   * the address is told — the one signal the owner gets if it was not them.
   */
  async changePassword(input: { userId: number; current: string; next: string; keptSession: string; address: string }): Promise<void> {
    const user = await this.deps.users.findById(input.userId);
    const found = user ? await this.deps.users.findForSignIn(user.email) : undefined;
    if (!user || !found) throw new ApiError('not_found', { humanMessage: 'This account no longer exists' });
    if (found.passwordHash === null)
      throw new ApiError('conflict', {
        param: 'current_password',
        humanMessage:
          'Your account signs in with single sign-on and has no password; to add one, ask for a reset link from the sign-in page',
      });
    await this.deps.throttle.begin(user.email, input.address);
    if (!(await verifyPassword(found.passwordHash, input.current)))
      throw new ApiError('validation_error', { status: 422, param: 'current_password', humanMessage: 'The current password is not right' });
    await this.deps.throttle.succeeded(user.email, input.address);
    if (input.next === input.current)
      throw new ApiError('validation_error', {
        status: 422,
        param: 'new_password',
        humanMessage: 'The new password is the same as the current one',
      });
    const weakness = passwordWeakness(input.next, user.email);
    if (weakness) throw new ApiError('weak_password', { humanMessage: weakness, param: 'new_password' });
    await this.deps.users.setPasswordHash(user.id, await hashPassword(input.next), this.now());
    // Reset links asked for before are void: the password they would replace is gone.
    await this.deps.tokens.revokeUnused('reset_password', user.id, this.now());
    await this.deps.sessions.destroyOthersForUser(user.id, input.keptSession);
    // The change is made: a mail server that fails now must not answer it as failed (logged instead).
    this.deps.mailer.sendLater(
      actionMessage(
        user.email,
        'Your password was changed',
        `Hello ${user.displayName}, the password of your account was changed from the portal's settings, and every other signed-in session was signed out.`,
        'Sign in',
        `${this.deps.baseUrl}/login`,
        'If you did not change it, ask for a reset link from the sign-in page at once, and tell your administrator.',
      ),
      'password-change email',
    );
  }

  /** Sets a new password from a reset link; every session of the account ends. */
  /**
   * The account a reset link would reset, without using the link: `invalid_token` when the link
   * no longer works (used, replaced by a newer one, expired, or never issued), so its page can
   * say so instead of offering a form that cannot succeed.
   */
  async resetLinkUser(token: string): Promise<User> {
    const peeked = await this.deps.tokens.peek('reset_password', token, this.now());
    const user = peeked?.userId ? await this.deps.users.findById(peeked.userId) : undefined;
    if (!user) throw invalidResetLink();
    return user;
  }

  async resetPassword(token: string, password: string): Promise<User> {
    const invalid = invalidResetLink;
    const user = await this.resetLinkUser(token);
    // Checked before the link is used, so a refused password does not burn it.
    const weakness = passwordWeakness(password, user.email);
    if (weakness) throw new ApiError('weak_password', { humanMessage: weakness, param: 'password' });
    if (!(await this.deps.tokens.consume('reset_password', token, this.now()))) throw invalid();
    await this.deps.users.setPasswordHash(user.id, await hashPassword(password), this.now());
    await this.deps.users.dropUnverifiedLinks(user.id);
    // Receiving the link proves the address, so an unverified account becomes verified.
    const updated = await this.deps.users.markEmailVerified(user.id, this.now(), this.deps.ownerEmail);
    await this.deps.sessions.destroyForUser(user.id);
    return updated;
  }
}

/** A reset link that no longer works (used, replaced, expired) or never did. */
const invalidResetLink = () =>
  new ApiError('invalid_token', {
    param: 'token',
    humanMessage: 'This reset link is not valid: it may have been used already or expired',
  });
