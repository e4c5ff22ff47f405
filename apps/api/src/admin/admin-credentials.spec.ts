import { AdminCredentials } from './admin-credentials';

const basic = (text: string): string => `Basic ${Buffer.from(text, 'utf8').toString('base64')}`;

describe('AdminCredentials', () => {
  const credentials = new AdminCredentials('ops', 'correct horse battery');

  it('accepts exactly the configured user and password', () => {
    expect(credentials.accepts(basic('ops:correct horse battery'))).toBe(true);
    expect(credentials.accepts(`basic  ${Buffer.from('ops:correct horse battery').toString('base64')} `)).toBe(true);
  });

  it('refuses a wrong user or password, a missing header, and other schemes', () => {
    expect(credentials.accepts(basic('ops:correct horse batter'))).toBe(false);
    expect(credentials.accepts(basic('admin:correct horse battery'))).toBe(false);
    expect(credentials.accepts(basic('ops'))).toBe(false);
    expect(credentials.accepts(undefined)).toBe(false);
    expect(credentials.accepts('Bearer ops:correct horse battery')).toBe(false);
    expect(credentials.accepts('Basic not base64!')).toBe(false);
  });
});
