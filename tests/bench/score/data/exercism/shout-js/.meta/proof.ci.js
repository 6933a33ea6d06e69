export const shout = (text) => text.toUpperCase();
