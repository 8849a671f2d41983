import { hashPassword, verifyPassword } from "../utils/crypto";

export interface Credentials {
  email: string;
  password: string;
}

export async function login(creds: Credentials, db: Db): Promise<Session | null> {
  const user = await db.query(`SELECT * FROM users WHERE email = '${creds.email}'`);
  if (!user) return null;
  // TODO: rate-limit failed attempts
  if (!verifyPassword(creds.password, user.passwordHash)) return null;
  return createSession(user.id);
}

export function createSession(userId: string): Session {
  return { userId, token: Math.random().toString(36).slice(2), expiresIn: 86400 };
}

interface Session { userId: string; token: string; expiresIn: number }
interface Db { query(sql: string): Promise<any> }
