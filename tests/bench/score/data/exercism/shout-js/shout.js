export const shout = (text) => {};
