// Legal pages' copy. Each page shows the legal version in force (SVC_LEGAL_VERSION), the one
// users accept at sign-up and through /api/legal/accept.
import type { Article } from './article.js';

/** Legal pages, by path. */
export const legalArticles: Record<string, Article> = {
  '/legal/terms': {
    title: 'Terms of service',
    lead: 'The agreement between you and the operator of this platform.',
    sections: [
      {
        heading: 'The service',
        paragraphs: [
          'The platform forwards your requests to third-party model suppliers and returns their answers. Answers are produced by those models; check them before relying on them.',
        ],
      },
      {
        heading: 'Your account',
        bullets: [
          'Keep your password and API keys secret; you are responsible for use of your keys.',
          'Tell us promptly if you suspect a key or account is compromised.',
          'We may suspend accounts that break these terms or the acceptable use policy.',
        ],
      },
      {
        heading: 'Payment',
        paragraphs: [
          'Usage is charged at the prices published on the pricing page when the request is made, against your prepaid wallet or your organisation’s billing arrangement.',
        ],
      },
      {
        heading: 'Changes',
        paragraphs: ['When these terms change, the version number changes and you are asked to accept the new version before continuing.'],
      },
    ],
  },
  '/legal/aup': {
    title: 'Acceptable use policy',
    lead: 'What the platform may not be used for.',
    sections: [
      {
        bullets: [
          'Breaking the law or the usage policies of the model suppliers.',
          'Generating content that sexualises minors, incites violence or harasses people.',
          'Attempting to break into the platform, other accounts or supplier systems.',
          'Sharing keys outside your organisation or reselling access without an agreement.',
        ],
      },
    ],
  },
  '/legal/privacy': {
    title: 'Privacy notice',
    lead: 'What we keep about you, why, and for how long.',
    sections: [
      {
        heading: 'Account data',
        paragraphs: ['Your name, email address, organisation, language and the legal versions you accepted, to run your account.'],
      },
      {
        heading: 'Usage data',
        paragraphs: [
          'Per-request records (time, key, model, supplier, token counts, cost) for billing, budgets and audit. Prompt and answer text is not logged unless your administrator turns that on.',
        ],
      },
      {
        heading: 'Your rights',
        paragraphs: [
          'Ask the platform owner for a copy of your data, a correction or deletion; billing records are kept as long as the law requires.',
        ],
      },
    ],
  },
  '/legal/cookies': {
    title: 'Cookie policy',
    lead: 'This site uses only the cookies it needs to work.',
    sections: [
      {
        bullets: [
          'svc_portal_sid: your signed-in session (HttpOnly, ends at sign-out or after inactivity).',
          'svc_lang: your preferred language.',
          'svc_tos: for one sign-up, records that you accepted the terms before being sent to single sign-on.',
          'No advertising or third-party tracking cookies.',
        ],
      },
    ],
  },
  '/legal/dpa': {
    title: 'Data processing agreement',
    lead: 'For organisations that process personal data through the platform.',
    sections: [
      {
        heading: 'Roles',
        paragraphs: [
          'Your organisation is the controller of the data in its requests; the platform operator processes it only to provide the service, and model suppliers act as sub-processors.',
        ],
      },
      {
        heading: 'Safeguards',
        bullets: [
          'Region policies keep requests with suppliers in the regions you allow.',
          'Access to request records is limited to your administrators and the operator’s support staff.',
          'Personal data breaches are notified without undue delay.',
        ],
      },
    ],
  },
  '/legal/refund': {
    title: 'Refund policy',
    lead: 'When money comes back to you.',
    sections: [
      {
        bullets: [
          'Unused prepaid wallet credit can be refunded on request within 12 months of purchase.',
          'Usage already served is not refunded, except for requests that failed on our side and were charged by mistake.',
          'Refunds go back to the original payment method.',
        ],
      },
    ],
  },
  '/legal/billing': {
    title: 'Billing terms',
    lead: 'How usage becomes a charge.',
    sections: [
      {
        bullets: [
          'Prices are per million tokens (input and output separately), per audio minute or per million characters, as published on the pricing page.',
          'Each request is charged once, from its audit record.',
          'Wallet top-ups are credited when the payment processor confirms the payment.',
          'Automatic top-up, when enabled, charges your saved payment method once each time the balance falls below your threshold.',
        ],
      },
    ],
  },
  '/legal/security': {
    title: 'Security commitments',
    lead: 'What we commit to in running the platform.',
    sections: [
      {
        bullets: [
          'Secrets hashed at rest; supplier credentials encrypted or held in Kubernetes Secrets.',
          'Encrypted transport between you and the platform when served over HTTPS.',
          'Least-privilege access for administrators, scoped by organisation.',
          'Security issues reported to us are acknowledged within two business days.',
        ],
      },
    ],
  },
};
