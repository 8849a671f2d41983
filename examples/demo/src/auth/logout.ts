export function logout(sessions: Map<string, unknown>, token: string): boolean {
  // TODO: also revoke refresh tokens
  return sessions.delete(token);
}

export const LOGOUT_REDIRECT = "/";
