import { shout } from './shout';

test('shouts', () => expect(shout('hi')).toBe('HI'));
